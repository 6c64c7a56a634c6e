package repo_test

import (
	"context"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
)

type Book struct {
	mgm.DefaultModel `bson:",inline"`
	Title            string `bson:"title"`
}

func ExampleNew() {
	ctx := context.Background()
	srv, err := mongotest.NewServer(ctx)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := srv.Client(ctx)
	if err != nil {
		panic(err)
	}
	defer client.Disconnect(ctx)
	db := client.Database(mongotest.UniqueName("example"))
	defer db.Drop(ctx)

	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		fmt.Println(e.Type, e.Op, e.Collection)
		return nil
	}))
	books, err := repo.New[*Book](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	b := &Book{Title: "Go"}
	if err := books.Insert(ctx, b); err != nil {
		panic(err)
	}
	found, err := books.FindOne(ctx, bson.M{"title": "Go"})
	if err != nil {
		panic(err)
	}
	fmt.Println("found:", found.Title, found.ID == b.ID)
	// Output:
	// BeforeConvert Insert books
	// BeforeSave Insert books
	// AfterSave Insert books
	// BeforeQuery Find books
	// AfterLoad Find books
	// AfterConvert Find books
	// found: Go true
}
