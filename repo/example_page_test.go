package repo_test

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
)

// Pages by keyset: each page continues after the last book of the one
// before (Page.Next), in title order with _id as the tiebreaker, so that
// a book written meanwhile neither repeats nor skips one. Offset paging
// sets PageRequest.Offset instead of After.
func ExampleRepository_FindPage() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	books, err := repo.New[*Book](events.NewBus(), repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	var all []*Book
	for _, title := range []string{"Dune", "Emma", "Ulysses", "Beloved", "Dracula"} {
		all = append(all, &Book{Title: title})
	}
	if err := books.InsertMany(ctx, all); err != nil {
		panic(err)
	}
	req := repo.PageRequest{Size: 2, Sort: bson.D{{Key: "title", Value: 1}}, Count: true}
	for {
		page, err := books.FindPage(ctx, bson.D{}, req)
		if err != nil {
			panic(err)
		}
		for _, b := range page.Models {
			fmt.Print(b.Title, " ")
		}
		fmt.Println("| of", page.Total, "more:", page.More)
		if !page.More {
			break
		}
		req.After = page.Next
	}
	// Output:
	// Beloved Dracula | of 5 more: true
	// Dune Emma | of 5 more: true
	// Ulysses | of 5 more: false
}
