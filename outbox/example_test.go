package outbox_test

import (
	"context"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Invoice records domain events with an embedded Recorder.
type Invoice struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Total            int    `bson:"total"`
	Status           string `bson:"status"`
}

// Issue changes the invoice and records what happened.
func (i *Invoice) Issue() {
	i.Status = "issued"
	i.Record("invoice.issued", bson.D{{Key: "total", Value: i.Total}})
}

func Example() {
	ctx := context.Background()
	// srv: a mongotest.Server. One connection: on FerretDB, whose updates
	// are not atomic across connections, the outbox asks for it.
	client, err := srv.Client(ctx, options.Client().SetMaxPoolSize(1))
	if err != nil {
		panic(err)
	}
	defer client.Disconnect(ctx)
	db := client.Database(mongotest.UniqueName("example"))
	defer db.Drop(ctx)

	bus := events.NewBus()
	bus.Register(outbox.New())
	invoices, err := repo.New[*Invoice](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	inv := &Invoice{Total: 42}
	inv.Issue()
	if err := invoices.Insert(ctx, inv); err != nil { // the event is stored with the invoice
		panic(err)
	}
	inv.Status = "paid"
	inv.Record("invoice.paid", nil)
	if err := invoices.Save(ctx, inv); err != nil {
		panic(err)
	}

	// Any time later, in any process: a relay delivers what is stored.
	pub := outbox.PublisherFunc(func(_ context.Context, m outbox.Message) error {
		fmt.Println(m.Seq, m.Type, m.Source, m.Attempt)
		return nil
	})
	relay, err := outbox.NewRelay(db, pub)
	if err != nil {
		panic(err)
	}
	n, err := relay.Drain(ctx)
	fmt.Println(n, err)
	// Output:
	// 1 invoice.issued invoices 1
	// 2 invoice.paid invoices 1
	// 2 <nil>
}
