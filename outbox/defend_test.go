package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// defendSetup returns a repository of orders on a fresh database with one
// connection on FerretDB (the outbox refuses more there).
func defendSetup(t testing.TB, opts ...outbox.Option) (*repo.Repository[*order], *mongo.Database) {
	t.Helper()
	return defendSetupOn(t, srv.Database(t), opts...)
}

func defendSetupOn(t testing.TB, db *mongo.Database, opts ...outbox.Option) (*repo.Repository[*order], *mongo.Database) {
	t.Helper()
	bus := events.NewBus()
	bus.Register(outbox.New(opts...))
	r, err := repo.New[*order](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, db
}

// insertXY inserts x, recording x.1, and a millisecond later by c, y,
// recording y.1, so that x is due first.
func insertXY(t testing.TB, orders *repo.Repository[*order], c *fakeclock.Clock) (x, y *order) {
	t.Helper()
	x = &order{Status: "x"}
	x.Record("x.1", nil)
	require.NoError(t, orders.Insert(ctx, x))
	c.Advance(time.Millisecond)
	y = &order{Status: "y"}
	y.Record("y.1", nil)
	require.NoError(t, orders.Insert(ctx, y))
	return x, y
}

// pub records every message it is given, in order, and fails as fail says.
type pub struct {
	mu   sync.Mutex
	msgs []outbox.Message
	fail func(m outbox.Message) error
	hook func(m outbox.Message) // called before recording, outside the lock
}

func (p *pub) Publish(_ context.Context, m outbox.Message) error {
	if p.hook != nil {
		p.hook(m)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		if err := p.fail(m); err != nil {
			return err
		}
	}
	p.msgs = append(p.msgs, m)
	return nil
}

func (p *pub) all() []outbox.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]outbox.Message(nil), p.msgs...)
}

// countID counts how often the message with id was published.
func countID(ms []outbox.Message, id string) int {
	n := 0
	for _, m := range ms {
		if m.ID == id {
			n++
		}
	}
	return n
}

func relay(t testing.TB, db *mongo.Database, p outbox.Publisher, opts ...outbox.RelayOption) *outbox.Relay {
	t.Helper()
	r, err := outbox.NewRelay(db, p, opts...)
	require.NoError(t, err)
	return r
}

// raw reads the _outbox field of the document with id, raw, or nil.
func box(t testing.TB, db *mongo.Database, id any) bson.M {
	t.Helper()
	var doc struct {
		Outbox bson.M `bson:"_outbox"`
	}
	err := db.Collection("orders").FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&doc)
	if err == mongo.ErrNoDocuments {
		return nil
	}
	require.NoError(t, err)
	return doc.Outbox
}

func queueLen(t testing.TB, db *mongo.Database, id any) int {
	b := box(t, db, id)
	if b == nil {
		return 0
	}
	q, _ := b["q"].(bson.A)
	return len(q)
}

func contextWithCancel() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }

func upsert() *options.UpdateOptions { return options.Update().SetUpsert(true) }

func bsonD() bson.D { return bson.D{} }

func bsonSet(k string, v any) bson.D {
	return bson.D{{Key: "$set", Value: bson.D{{Key: k, Value: v}}}}
}

// waitClosed waits, ten seconds at most, for a value on ch or its close,
// and fails the test instead of hanging when none comes.
func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10s for this, in vain: %s", what)
	}
}
