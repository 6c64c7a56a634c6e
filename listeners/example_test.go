package listeners_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

type Member struct {
	mgm.DefaultModel `bson:",inline"`
	MemberNo         int64  `bson:"memberNo" auto:"inc,start=100"`
	Card             string `bson:"card" auto:"inc,format=CARD-{seq:4}"`
	Name             string `bson:"name"`
}

func exampleDB(ctx context.Context) (*mongo.Database, func()) {
	srv, err := mongotest.NewServer(ctx)
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

func ExampleNewAutoKeys() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	keys, err := listeners.NewAutoKeys(db)
	if err != nil {
		panic(err)
	}
	bus := events.NewBus()
	bus.Register(keys)
	members, err := repo.New[*Member](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"ann", "bob"} {
		m := &Member{Name: name}
		if err := members.Insert(ctx, m); err != nil {
			panic(err)
		}
		fmt.Println(m.Name, m.MemberNo, m.Card)
	}
	// Output:
	// ann 100 CARD-0001
	// bob 101 CARD-0002
}

type Guest struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

func (g *Guest) Validate() error {
	if g.Name == "" {
		return listeners.FieldError{Field: "Name", Reason: "is required"}
	}
	return nil
}

func ExampleNewValidation() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	bus.Register(listeners.NewValidation(nil)) // or a go-playground *validator.Validate
	guests, err := repo.New[*Guest](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	fmt.Println(guests.Insert(ctx, &Guest{}))
	n, _ := guests.Count(ctx, nil)
	fmt.Println("stored:", n)
	// Output:
	// events: BeforeSave listener aborted Insert of *listeners_test.Guest in collection "guests": validation of *listeners_test.Guest failed: Name: is required
	// stored: 0
}

// Invoice belongs to a tenant and is numbered per tenant.
type Invoice struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" tenant:"id"`
	No               int64  `bson:"no" auto:"inc,scope=tenant"`
	Amount           int    `bson:"amount"`
}

func ExampleNewTenancy() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	tenancy := listeners.NewTenancy()
	keys, err := listeners.NewAutoKeys(db, listeners.WithTenancy(tenancy))
	if err != nil {
		panic(err)
	}
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(tenancy)
	invoices, err := repo.New[*Invoice](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	acme := listeners.WithTenant(ctx, "acme")
	globex := listeners.WithTenant(ctx, "globex")
	for _, c := range []context.Context{acme, acme, globex} {
		inv := &Invoice{Amount: 10}
		if err := invoices.Insert(c, inv); err != nil {
			panic(err)
		}
		fmt.Println(inv.Tenant, inv.No)
	}
	n, _ := invoices.Count(acme, bson.M{"tenant": "globex"}) // stays inside acme
	fmt.Println("acme sees of globex:", n)
	_, err = invoices.Find(ctx, nil)
	fmt.Println(errors.Is(err, listeners.ErrNoTenant))
	// Output:
	// acme 1
	// acme 2
	// globex 1
	// acme sees of globex: 0
	// true
}

// Post is soft-deleted: a delete sets DeletedAt.
type Post struct {
	mgm.DefaultModel `bson:",inline"`
	Title            string     `bson:"title"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" audit:"deletedAt"`
}

// Deleting marks; WithDeleted sees marked documents; an update under
// WithDeleted that unsets the mark restores one.
func ExampleNewSoftDelete() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	bus := events.NewBus()
	bus.Register(listeners.NewSoftDelete())
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
	live, _ := posts.Count(ctx, nil)
	all, _ := posts.Count(listeners.WithDeleted(ctx), nil)
	fmt.Println("live:", live, "with deleted:", all)

	// Restore.
	_, err = posts.UpdateOne(listeners.WithDeleted(ctx), bson.M{"_id": p.ID}, bson.M{"$unset": bson.M{"deletedAt": ""}})
	if err != nil {
		panic(err)
	}
	live, _ = posts.Count(ctx, nil)
	fmt.Println("live after restore:", live)

	// Purge for real.
	n, _ := posts.DeleteMany(listeners.HardDelete(ctx), bson.D{})
	fmt.Println("purged:", n)
	// Output:
	// live: 0 with deleted: 1
	// live after restore: 1
	// purged: 1
}
