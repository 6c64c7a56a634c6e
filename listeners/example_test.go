package listeners_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
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
	n, _ := guests.Count(ctx, bson.D{})
	fmt.Println("stored:", n)
	// Output:
	// events: BeforeSave listener aborted Insert of *listeners_test.Guest in collection "guests": listeners: validation of *listeners_test.Guest failed: Name: is required
	// stored: 0
}

// Page records who created and last changed it, and when.
// It embeds mgm.IDField, not mgm.DefaultModel, whose created_at and
// updated_at would record the same times a second time.
type Page struct {
	mgm.IDField `bson:",inline"`
	Title       string    `bson:"title"`
	Created     time.Time `bson:"created" audit:"createdAt"`
	Updated     time.Time `bson:"updated" audit:"updatedAt"`
	CreatedBy   string    `bson:"createdBy" audit:"createdBy"`
	UpdatedBy   string    `bson:"updatedBy" audit:"updatedBy"`
}

type editor struct{}

func ExampleNewAuditing() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	clock := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	bus := events.NewBus()
	bus.Register(listeners.NewAuditing(
		listeners.WithAuditor(func(ctx context.Context) (any, error) { return ctx.Value(editor{}), nil }),
		listeners.WithClock(func() time.Time { return clock })))
	pages, err := repo.New[*Page](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	p := &Page{Title: "draft"}
	if err := pages.Insert(context.WithValue(ctx, editor{}, "ann"), p); err != nil {
		panic(err)
	}
	clock = clock.Add(time.Hour)
	p.Title = "final"
	if err := pages.Update(context.WithValue(ctx, editor{}, "bob"), p); err != nil {
		panic(err)
	}
	stored, _ := pages.FindByID(ctx, p.ID)
	fmt.Println(stored.CreatedBy, stored.Created.Format(time.Kitchen))
	fmt.Println(stored.UpdatedBy, stored.Updated.Format(time.Kitchen))
	// Output:
	// ann 9:00AM
	// bob 10:00AM
}

func ExampleNewLogging() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	// A text handler on stdout, without the time and the random _id.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "id" {
				return slog.Attr{}
			}
			return a
		}}))
	bus := events.NewBus()
	bus.Register(listeners.NewLogging(logger, listeners.WithLevel(slog.LevelInfo)),
		events.On(events.AfterSave, events.AfterDelete))
	guests, err := repo.New[*Guest](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := guests.Insert(ctx, &Guest{Name: "ann"}); err != nil {
		panic(err)
	}
	if _, err := guests.DeleteMany(ctx, bson.M{"name": "ann"}); err != nil {
		panic(err)
	}
	// Output:
	// level=INFO msg="mgmevents AfterSave" event=AfterSave op=Insert collection=guests model=*listeners_test.Guest
	// level=INFO msg="mgmevents AfterDelete" event=AfterDelete op=DeleteMany collection=guests model=*listeners_test.Guest deleted=1
}
