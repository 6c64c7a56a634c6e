package autokeys_test

import (
	"context"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/mongo"
)

// Member has a number from 100 and a card number built from a sequence.
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

func ExampleNew() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	keys, err := autokeys.New(db)
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
