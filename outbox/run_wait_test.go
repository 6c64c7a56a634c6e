package outbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
)

// TestRunWaitsWhenOthersHoldWhatIsLeft: a relay's Run drains again at once
// after a Drain that delivered, but not after one that ended on due
// documents other relays hold: reading them again, a scan of the
// collection on FerretDB, would only find them held, and slow down the
// relays that work on them. R1 delivers y, its share, reads again, finds
// x, R2's share, which R2 holds, and then waits its poll interval: two
// reads of due documents, not three.
func TestRunWaitsWhenOthersHoldWhatIsLeft(t *testing.T) {
	const lease = 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := defendSetup(t, outbox.WithClock(c.Now))
	var reads atomic.Int64
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "find" && e.Command.Lookup("find").StringValue() == "orders" {
			if _, ok := e.Command.Lookup("sort").DocumentOK(); ok { // the read of due documents
				reads.Add(1)
			}
		}
	}}
	opts := []outbox.RelayOption{outbox.WithCollections("orders"), outbox.WithRelayClock(c), outbox.WithLease(lease)}
	p := &pub{}
	r1 := relay(t, monitored(t, db, mon), p, opts...)
	r2 := relay(t, db, &pub{}, opts...)
	_, err := r2.Drain(ctx) // R2 says it serves orders
	require.NoError(t, err)

	// One document falls to each relay.
	members := []string{r1.ID(), r2.ID()}
	coll := db.Collection("orders")
	var x, y *order
	for x == nil || y == nil {
		o := &order{Status: "placed"}
		o.Record(fmt.Sprint("e", time.Now().UnixNano()), nil)
		require.NoError(t, orders.Insert(ctx, o))
		switch outbox.OwnerOfLease(outbox.LeaseKey(coll, o.ID)+"@0", members) {
		case r1.ID():
			if y == nil {
				y = o
				continue
			}
		case r2.ID():
			if x == nil {
				x = o
				continue
			}
		}
		_, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: o.ID}})
		require.NoError(t, err)
	}
	slot := c.Now().UnixNano() / int64(lease)
	_, err = db.Collection(outbox.Leases).InsertOne(ctx, bson.D{ // R2 holds x
		{Key: "_id", Value: fmt.Sprintf("%s@%d", outbox.LeaseKey(coll, x.ID), slot)},
		{Key: "by", Value: r2.ID()}, {Key: "until", Value: time.Unix(0, (slot+1)*int64(lease))}})
	require.NoError(t, err)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r1.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)       // real time, far more than the Drain needs
	for queueLen(t, db, y.ID) > 0 || c.Timers() == 0 { // y is out, and Run waits
		require.True(t, time.Now().Before(deadline), "R1 delivers y and waits its poll interval")
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	require.Len(t, p.all(), 1)
	assert.Equal(t, int64(2), reads.Load(), "R1 reads due documents twice: y and x, then x alone")
}
