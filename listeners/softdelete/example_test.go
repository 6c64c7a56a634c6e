package softdelete_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

func exampleDB(ctx context.Context) (*mongo.Database, func()) {
	db, done, err := mongotest.Database(ctx, "example")
	if err != nil {
		panic(err)
	}
	return db, done
}

// Post is soft-deleted: a delete sets DeletedAt.
type Post struct {
	mgm.DefaultModel `bson:",inline"`
	Title            string     `bson:"title"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

func ExampleNew() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	bus.Register(softdelete.New())
	posts, err := repo.New[*Post](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	p := &Post{Title: "hello"}
	if err := posts.Insert(ctx, p); err != nil {
		panic(err)
	}
	if err := posts.Delete(ctx, p); err != nil {
		panic(err)
	}
	live, _ := posts.Count(ctx, bson.D{})
	all, _ := posts.Count(softdelete.WithDeleted(ctx), bson.D{})
	fmt.Println("live:", live, "with deleted:", all)

	fmt.Println("the model knows:", p.DeletedAt != nil)

	// Restore.
	if err := softdelete.RestoreModel(ctx, posts, p); err != nil {
		panic(err)
	}
	live, _ = posts.Count(ctx, bson.D{})
	fmt.Println("live after restore:", live, "marked:", p.DeletedAt != nil)

	// Purge for real.
	res, _ := posts.DeleteMany(softdelete.HardDelete(ctx), bson.D{})
	fmt.Println("purged:", res.DeletedCount)
	// Output:
	// live: 0 with deleted: 1
	// the model knows: true
	// live after restore: 1 marked: false
	// purged: 1
}
