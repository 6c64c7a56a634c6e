package autokeys_test

import (
	"context"
	"errors"
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

// Line is numbered per order: each order's lines count from 1.
type Line struct {
	mgm.DefaultModel `bson:",inline"`
	OrderNo          string `bson:"orderNo"`
	LineNo           int64  `bson:"lineNo" auto:"inc,scope=orderNo"`
	Item             string `bson:"item"`
}

// Numbers per scope: `auto:"inc,scope=orderNo"` keeps one sequence per
// value of orderNo (scope=a+b for several fields), with a unique index on
// (orderNo, lineNo).
func ExampleNew_scope() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	keys, err := autokeys.New(db)
	if err != nil {
		panic(err)
	}
	defer keys.Close(ctx)
	bus := events.NewBus()
	bus.Register(keys)
	lines, err := repo.New[*Line](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	batch := []*Line{{OrderNo: "A-1", Item: "tea"}, {OrderNo: "B-7", Item: "cup"}, {OrderNo: "A-1", Item: "pot"}}
	if err := lines.InsertMany(ctx, batch); err != nil {
		panic(err)
	}
	for _, l := range batch {
		fmt.Println(l.OrderNo, l.LineNo, l.Item)
	}
	err = lines.Insert(ctx, &Line{Item: "spoon"})
	fmt.Println(errors.Is(err, autokeys.ErrEmptyScope))
	// Output:
	// A-1 1 tea
	// B-7 1 cup
	// A-1 2 pot
	// true
}
