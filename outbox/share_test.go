package outbox_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// slotStart returns a time at the start of a slot of lease, so that a
// test knows which slot each of its times falls in.
func slotStart(lease time.Duration) time.Time {
	return time.Unix(0, (time.Now().UnixNano()/int64(lease)+1)*int64(lease))
}

// monitored returns db on a client of its own, with one connection, whose
// commands mon sees.
func monitored(t *testing.T, db *mongo.Database, mon *event.CommandMonitor) *mongo.Database {
	t.Helper()
	client, err := srv.Client(ctx, options.Client().SetMaxPoolSize(1).SetMonitor(mon))
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(db.Name())
}

// oneOrderAtSlotStart stores an order with one event at the start of a
// slot of lease, by the clock it returns.
func oneOrderAtSlotStart(t *testing.T, lease time.Duration) (*fakeclock.Clock, *mongo.Database, *order) {
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	require.NoError(t, orders.Insert(ctx, o))
	return c, db, o
}

// TestRelaySkipsWhatAnotherHolds: a relay whose claim found a document
// held by another relay does not claim it again while that slot lasts, so
// that relays sharing a backlog write no claims that cannot succeed.
func TestRelaySkipsWhatAnotherHolds(t *testing.T) {
	lease := 3 * time.Second
	c, db, _ := oneOrderAtSlotStart(t, lease)

	var claims atomic.Int64
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "insert" && e.Command.Lookup("insert").StringValue() == outbox.Leases {
			claims.Add(1)
		}
	}}
	started, release := make(chan struct{}), make(chan struct{})
	slow := &recorder{fail: func(outbox.Message) error {
		close(started)
		<-release
		return nil
	}}
	a := newRelay(t, db, slow, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"))
	aDone := make(chan error)
	go func() { _, err := a.Drain(ctx); aDone <- err }()
	waitClosed(t, started, "a publishes")

	p := &recorder{}
	b := newRelay(t, monitored(t, db, mon), p, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"), outbox.WithCountEvery(time.Hour))
	n, err := b.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a holds the document")
	require.EqualValues(t, 1, claims.Load(), "b's claim, refused")
	claims.Store(0)
	n, err = b.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Zero(t, claims.Load(), "no claim that cannot succeed")
	close(release)
	require.NoError(t, <-aDone)
	assert.Len(t, slow.take(), 1)
	assert.Empty(t, p.take(), "b never published what a held")
}

// TestRelayLeavesWhatItReadStale: a relay reads a document late in a
// slot; another relay, holding that slot, delivers its event before the
// first claims it, in the next slot. The first relay's claim includes the
// slot of its read, which the server refuses, so it does not publish the
// event again from its stale read.
func TestRelayLeavesWhatItReadStale(t *testing.T) {
	lease := 3 * time.Second
	c, db, o := oneOrderAtSlotStart(t, lease)

	pa, pb := &recorder{}, &recorder{}
	a := newRelay(t, db, pa, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"))
	var armed atomic.Bool
	armed.Store(true)
	var readID atomic.Int64 // the request ID of b's read of the due documents
	var aErr error
	mon := &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if e.CommandName == "find" && e.Command.Lookup("find").StringValue() == "orders" && armed.Load() {
				readID.Store(e.RequestID)
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			if e.RequestID == readID.Load() && armed.CompareAndSwap(true, false) {
				_, aErr = a.Drain(ctx) // a holds the read's slot, and delivers
				c.Advance(lease)       // b claims in the next slot
			}
		},
	}
	b := newRelay(t, monitored(t, db, mon), pb, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"))
	_, err := b.Drain(ctx)
	require.NoError(t, err)
	require.NoError(t, aErr)
	require.False(t, armed.Load(), "a delivered between b's read and b's claim")
	assert.Len(t, pa.take(), 1)
	assert.Empty(t, pb.take(), "b published the event a had delivered, from its stale read")
	assert.Empty(t, read(t, db, o.ID).Box.Queue, "nothing left to deliver")
}
