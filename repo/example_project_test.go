package repo_test

import (
	"context"
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
