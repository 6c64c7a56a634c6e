package repo_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

type Book struct {
	mgm.DefaultModel `bson:",inline"`
	Title            string `bson:"title"`
}

// exampleDB starts an embedded server and returns a fresh database on it,
// and what to call when done.
func exampleDB(ctx context.Context, opts ...mongotest.Option) (*mongo.Database, func()) {
	srv, err := mongotest.NewServer(ctx, opts...)
	if err != nil {
		panic(err)
	}
	client, err := srv.Client(ctx)
	if err != nil {
		panic(err)
	}
	db := client.Database(mongotest.UniqueName("example"))
	return db, func() { db.Drop(ctx); client.Disconnect(ctx); srv.Close() }
}

func ExampleNew() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

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

// Post is a blog post that may be a draft.
type Post struct {
	mgm.DefaultModel `bson:",inline"`
	Title            string `bson:"title"`
	Draft            bool   `bson:"draft"`
	Views            int    `bson:"views"`
}

// A BeforeQuery listener sees every filter a repository sends and may
// rewrite it: here drafts are hidden from every read, count and update,
// whatever filter the caller passes.
func Example_beforeQuery() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Filter = mql.And(e.Filter, bson.E{Key: "draft", Value: false})
		return nil
	}), events.ForModel[*Post](), events.On(events.BeforeQuery))
	posts, err := repo.New[*Post](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := posts.InsertMany(ctx, []*Post{{Title: "Hello"}, {Title: "Secret plans", Draft: true}}); err != nil {
		panic(err)
	}
	n, _ := posts.Count(ctx, bson.D{})
	fmt.Println("visible posts:", n)
	_, err = posts.FindOne(ctx, bson.M{"title": "Secret plans"})
	fmt.Println("the draft:", err)
	res, _ := posts.UpdateMany(ctx, bson.D{}, bson.M{"$inc": bson.M{"views": 1}})
	fmt.Println("updated:", res.ModifiedCount)
	// Output:
	// visible posts: 1
	// the draft: repo posts: FindOne: mongo: no documents in result
	// updated: 1
}

// An upsert is UpdateOne with SetUpsert(true). The inserted document holds
// the filter's equalities and what $setOnInsert gives.
func ExampleRepository_UpdateOne_upsert() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	posts, err := repo.New[*Post](events.NewBus(), repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	for range 2 {
		res, err := posts.UpdateOne(ctx, bson.M{"title": "Counted"},
			bson.M{"$inc": bson.M{"views": 1}, "$setOnInsert": bson.M{"draft": true}},
			options.Update().SetUpsert(true))
		if err != nil {
			panic(err)
		}
		fmt.Println("inserted:", res.UpsertedCount, "matched:", res.MatchedCount)
	}
	p, _ := posts.FindOne(ctx, bson.M{"title": "Counted"})
	fmt.Println(p.Title, p.Views, p.Draft)
	// Output:
	// inserted: 1 matched: 0
	// inserted: 0 matched: 1
	// Counted 2 true
}

// Iter streams models: each document's AfterLoad and AfterConvert fire as
// the cursor reads it, not for the whole result up front.
func ExampleRepository_Iter() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	bus.Register(events.TypedFunc(func(_ context.Context, _ *events.Event, b *Book) error {
		fmt.Println("  AfterConvert", b.Title)
		return nil
	}), events.ForModel[*Book](), events.On(events.AfterConvert))
	books, err := repo.New[*Book](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := books.InsertMany(ctx, []*Book{{Title: "Go"}, {Title: "Rust"}}); err != nil {
		panic(err)
	}

	cur, err := books.Iter(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "title", Value: 1}}))
	if err != nil {
		panic(err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		fmt.Println("read", cur.Model().Title)
	}
	if err := cur.Err(); err != nil {
		panic(err)
	}
	// Output:
	//   AfterConvert Go
	// read Go
	//   AfterConvert Rust
	// read Rust
}

// BulkWrite runs each of the driver's write models as its single twin
// (here Insert, ReplaceOne and DeleteOne), with its events, and adds up
// their results. A nil filter is refused; bson.D{} matches every document.
func ExampleRepository_BulkWrite() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	books, err := repo.New[*Book](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := books.Insert(ctx, &Book{Title: "Go"}); err != nil {
		panic(err)
	}
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		fmt.Println(e.Op, e.Type)
		return nil
	}), events.On(events.BeforeQuery, events.BeforeSave, events.BeforeDelete))

	res, err := books.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(&Book{Title: "Rust"}),
		mongo.NewReplaceOneModel().SetFilter(bson.M{"title": "Go"}).SetReplacement(&Book{Title: "Go 2"}),
		mongo.NewDeleteOneModel().SetFilter(bson.M{"title": "Rust"}),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("inserted:", res.InsertedCount, "replaced:", res.ModifiedCount, "deleted:", res.DeletedCount)

	_, err = books.DeleteOne(ctx, nil)
	fmt.Println(errors.Is(err, repo.ErrInvalidArgument), err)
	n, _ := db.Collection("books").CountDocuments(ctx, bson.D{{Key: "title", Value: "Go 2"}})
	fmt.Println("stored:", n)
	// Output:
	// Insert BeforeSave
	// ReplaceOne BeforeQuery
	// ReplaceOne BeforeSave
	// DeleteOne BeforeQuery
	// DeleteOne BeforeDelete
	// inserted: 1 replaced: 1 deleted: 1
	// true repo books: DeleteOne: nil filter (<nil>); pass bson.D{} to match every document: repo: invalid argument
	// stored: 1
}
