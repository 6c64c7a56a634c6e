package repo_test

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
)

// A listener that acts on new documents asks e.Op.Insert(), which covers
// InsertMany (OpInsertMany) as well as Insert and the Save of a new model
// (OpInsert): comparing e.Op with events.OpInsert would miss the batch.
func ExampleRepository_InsertMany_newDocuments() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Op.Insert() {
			fmt.Println("new book:", e.Model.(*Book).Title, "by", e.Op)
		}
		return nil
	}), events.On(events.AfterSave))
	books, err := repo.New[*Book](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := books.Insert(ctx, &Book{Title: "Go"}); err != nil {
		panic(err)
	}
	if err := books.InsertMany(ctx, []*Book{{Title: "Rust"}, {Title: "Zig"}}); err != nil {
		panic(err)
	}
	b := &Book{Title: "C"}
	if err := books.Save(ctx, b); err != nil { // a new model: an insert
		panic(err)
	}
	b.Title = "C99"
	if err := books.Save(ctx, b); err != nil { // a replace: not an insert
		panic(err)
	}
	// Output:
	// new book: Go by Insert
	// new book: Rust by InsertMany
	// new book: Zig by InsertMany
	// new book: C by Insert
}
