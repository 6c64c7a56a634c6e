package repo_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// PostTitle is a DTO of Post: the title and the views, not the draft flag.
type PostTitle struct {
	Title string `bson:"title"`
	Views int    `bson:"views"`
}

// FindAs reads Post's documents into another type: the repository sends a
// projection of PostTitle's fields, and the read publishes Post's events,
// so that the listeners and policies of Post confine and load it; here a
// listener hides drafts.
func ExampleFindAs() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Filter = bson.D{{Key: "$and", Value: bson.A{e.Filter, bson.D{{Key: "draft", Value: false}}}}}
		return nil
	}), events.On(events.BeforeQuery), events.ForModel[*Post]())
	posts, err := repo.New[*Post](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := posts.InsertMany(ctx, []*Post{{Title: "Hello", Views: 3}, {Title: "WIP", Draft: true}, {Title: "Again", Views: 7}}); err != nil {
		panic(err)
	}
	titles, err := repo.FindAs[PostTitle](ctx, posts, bson.D{}, options.Find().SetSort(bson.D{{Key: "views", Value: -1}}))
	if err != nil {
		panic(err)
	}
	for _, t := range titles {
		fmt.Println(t.Title, t.Views)
	}
	// Output:
	// Again 7
	// Hello 3
}

// FindOneAs reads one document into another type, as FindAs reads many,
// with Post's events and policies; none that matches is ErrNotFound.
func ExampleFindOneAs() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	posts, err := repo.New[*Post](events.NewBus(), repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := posts.Insert(ctx, &Post{Title: "Hello", Views: 3}); err != nil {
		panic(err)
	}
	t, err := repo.FindOneAs[PostTitle](ctx, posts, bson.D{{Key: "title", Value: "Hello"}})
	fmt.Println(t.Title, t.Views, err)
	_, err = repo.FindOneAs[PostTitle](ctx, posts, bson.D{{Key: "title", Value: "WIP"}})
	fmt.Println(errors.Is(err, repo.ErrNotFound))
	// Output:
	// Hello 3 <nil>
	// true
}

// FindPageAs pages documents into another type, as FindPage pages
// models: here by offset, most viewed first, with the total.
func ExampleFindPageAs() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	posts, err := repo.New[*Post](events.NewBus(), repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := posts.InsertMany(ctx, []*Post{{Title: "Hello", Views: 3}, {Title: "Again", Views: 7}, {Title: "Last", Views: 1}}); err != nil {
		panic(err)
	}
	req := repo.PageRequest{Size: 2, Sort: bson.D{{Key: "views", Value: -1}}, Count: true}
	for {
		page, err := repo.FindPageAs[PostTitle](ctx, posts, bson.D{}, req)
		if err != nil {
			panic(err)
		}
		fmt.Println(page.Models, "of", page.Total)
		if !page.More {
			break
		}
		req.Offset += int64(req.Size)
	}
	// Output:
	// [{Again 7} {Hello 3}] of 3
	// [{Last 1}] of 3
}
