package listeners_test

import (
	"context"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/mongo"
)

type Member struct {
	mgm.DefaultModel `bson:",inline"`
	MemberNo         int64  `bson:"memberNo" auto:"inc,start=100"`
	Card             string `bson:"card" auto:"inc,format=CARD-{seq:4}"`
	Name             string `bson:"name"`
}

func exampleDB(ctx context.Context) (*mongo.Database, func()) {
	db, done, err := mongotest.Database(ctx, "example")
	if err != nil {
		panic(err)
	}
	return db, done
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

// Deleting marks; WithDeleted sees marked documents; an update under
// WithDeleted that unsets the mark restores one.
