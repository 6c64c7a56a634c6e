package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/outbox/natsjs"
	"github.com/mgmevents/mgmevents/outbox/natsjs/natstest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// Purchase records domain events: they are stored in its document by the
// same write as the change, and a relay delivers them later.
type Purchase struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Item             string `bson:"item"`
	Status           string `bson:"status"`
}

// CollectionName keeps the demo's purchases apart.
func (*Purchase) CollectionName() string { return "demo_purchases" }

// Place places the purchase and records that it did.
func (p *Purchase) Place(item string) {
	p.Item, p.Status = item, "placed"
	p.Record("purchase.placed", bson.D{{Key: "item", Value: item}})
}

// Pay marks it paid and records that.
func (p *Purchase) Pay() {
	p.Status = "paid"
	p.Record("purchase.paid", nil)
}

// demoOutbox: purchases placed, paid and cancelled while no relay runs,
// the process stops; a relay started later delivers every event to
// JetStream, and a consumer prints them in order.
func demoOutbox(ctx context.Context, out io.Writer, db *mongo.Database) error {
	fmt.Fprintln(out, "\n12. The outbox: three purchases placed, one paid, one cancelled; no relay runs")
	if err := writePurchases(ctx, out, db); err != nil {
		return err
	}
	fmt.Fprintln(out, "   -> the process stops here, before anything was delivered")

	fmt.Fprintln(out, "\n13. Later, a relay delivers every stored event to JetStream")
	nsrv, err := natstest.NewServer()
	if err != nil {
		return err
	}
	defer nsrv.Close()
	js, err := nsrv.JetStream()
	if err != nil {
		return err
	}
	defer js.Conn().Close()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PURCHASES", Subjects: []string{natsjs.DefaultPrefix + ".>"}, Duplicates: time.Hour})
	if err != nil {
		return err
	}
	pub, err := natsjs.New(js)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(db, pub)
	if err != nil {
		return err
	}
	n, err := relay.Drain(ctx)
	if err != nil {
		return err
	}
	again, err := relay.Drain(ctx)
	if err != nil {
		return err
	}
	left, err := db.Collection("demo_purchases").CountDocuments(ctx, bson.D{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> %d delivered, %d on a second pass; the cancelled purchase's document is gone now (%d left)\n", n, again, left)

	fmt.Fprintln(out, "\n14. A consumer reads them, in order per purchase")
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return err
	}
	for range n {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return err
		}
		var ev struct {
			Type       string `json:"type"`
			Subject    string `json:"subject"`
			SubjectSeq int64  `json:"subjectseq"`
		}
		if err := json.Unmarshal(msg.Data(), &ev); err != nil || len(ev.Subject) < 4 {
			return fmt.Errorf("message %s is not an outbox CloudEvent: %v", msg.Subject(), err)
		}
		fmt.Fprintf(out, "   purchase …%s  #%d  %s\n", ev.Subject[len(ev.Subject)-4:], ev.SubjectSeq, ev.Type)
	}
	return nil
}

// writePurchases is the process that stops: its writes store the events,
// and nothing delivers them.
func writePurchases(ctx context.Context, out io.Writer, db *mongo.Database) error {
	bus := events.NewBus()
	bus.Register(outbox.New())
	purchases, err := repo.New[*Purchase](bus, repo.WithDatabase(db))
	if err != nil {
		return err
	}
	var ps []*Purchase
	for _, item := range []string{"book", "lamp", "chair"} {
		p := &Purchase{}
		p.Place(item)
		if err := purchases.Insert(ctx, p); err != nil {
			return err
		}
		ps = append(ps, p)
	}
	ps[0].Pay()
	if err := purchases.Save(ctx, ps[0]); err != nil {
		return err
	}
	ps[2].Record("purchase.cancelled", nil)
	if err := purchases.Delete(ctx, ps[2]); err != nil {
		return err
	}
	visible, err := purchases.Count(ctx, bson.D{})
	if err != nil {
		return err
	}
	pending, err := db.Collection("demo_purchases").CountDocuments(ctx, bson.D{{Key: outbox.Field + ".q.0", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> %d purchases visible; %d documents hold undelivered events, the cancelled one hidden until they are out\n", visible, pending)
	return nil
}
