package outbox_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestRelayWritesRemovalsBeforeAPublishThatOutlivesTheirLease: on a
// server with atomic filtered writes, a relay writes the removals of a
// few documents at once. x is delivered early in slot s and its removal
// waits; y's long queue renews y alone, so that y.2's publish may run into
// slot s+1, after x's lease (slot s) ended. Relay R2 then claims x, and
// would read x.1 still queued and publish it again, though no publish of
// it was in flight. R1 writes x's removal before y.2's publish.
func TestRelayWritesRemovalsBeforeAPublishThatOutlivesTheirLease(t *testing.T) {
	const lease = 30 * time.Second
	c := fakeclock.New(slotStart(lease).Add(time.Second))
	orders, db := defendSetup(t, outbox.WithClock(c.Now))
	x := &order{Status: "x"}
	x.Record("x.1", nil)
	require.NoError(t, orders.Insert(ctx, x))
	c.Advance(time.Millisecond)
	y := &order{Status: "y"}
	y.Record("y.1", nil)
	y.Record("y.2", nil)
	require.NoError(t, orders.Insert(ctx, y))

	opts := []outbox.RelayOption{outbox.WithCollections("orders"), outbox.WithRelayClock(c), outbox.WithLease(lease), outbox.WithAtomicWrites(true)}
	p2 := &pub{}
	r2 := relay(t, db, p2, opts...)
	var r2n int
	var r2err error
	p1 := &pub{hook: func(m outbox.Message) {
		switch m.Type {
		case "y.1": // a slow broker ack, well within the deadline
			c.Advance(15 * time.Second) // now slot start + 16s: past half the lease
		case "y.2": // published under the renewed lease (s+1)
			c.Advance(15 * time.Second) // slot s+1, +1s: x's lease (s) is over
			r2n, r2err = r2.Drain(ctx)
		}
	}}
	r1 := relay(t, db, p1, opts...)
	_, err := r1.Drain(ctx)
	require.NoError(t, err)
	require.NoError(t, r2err)
	t.Logf("r1 published %v; r2 delivered %d: %v", typesOf2(p1.all()), r2n, typesOf2(p2.all()))
	all := append(p1.all(), p2.all()...)
	assert.Equal(t, 1, countType(all, "x.1"), "x.1 published once")
}

// countType counts the messages of ms of type typ.
func countType(ms []outbox.Message, typ string) int {
	n := 0
	for _, m := range ms {
		if m.Type == typ {
			n++
		}
	}
	return n
}

// TestDrainLeavesADocumentWhoseLeaseAnotherDrainClaimedAfterAGap: Drain A
// reads x (three events) and d in slot s0 and claims both for s0. It works
// on x across slots, renewing x alone, so d's lease lapses. In s0+1 relay
// R2 holds d and delivers d.1 (d.2 fails once). In s0+2 Drain B of A's
// relay reads v and d, claims both for s0+2 and waits in v's publish,
// before d. A then reaches d: its relay holds d, but from s0+2 on, not
// since A's read, so A leaves it rather than publish d.1 again.
func TestDrainLeavesADocumentWhoseLeaseAnotherDrainClaimedAfterAGap(t *testing.T) {
	const lease = 30 * time.Second
	s0t := slotStart(lease)
	at := func(slot int64, off time.Duration) time.Time { return s0t.Add(time.Duration(slot)*lease + off) }
	c := fakeclock.New(at(0, 0))
	var mu sync.Mutex
	odate := at(0, 0)
	outNow := func() time.Time { mu.Lock(); defer mu.Unlock(); return odate }
	setDate := func(t time.Time) { mu.Lock(); odate = t; mu.Unlock() }
	orders, db := defendSetup(t, outbox.WithClock(outNow))
	x := &order{Status: "x"}
	x.Record("x.1", nil)
	x.Record("x.2", nil)
	x.Record("x.3", nil)
	require.NoError(t, orders.Insert(ctx, x))
	setDate(at(0, 2*time.Millisecond))
	d := &order{Status: "d"}
	d.Record("d.1", nil)
	d.Record("d.2", nil)
	require.NoError(t, orders.Insert(ctx, d))
	c.Advance(time.Second) // s0 + 1s

	opts := []outbox.RelayOption{outbox.WithCollections("orders"), outbox.WithRelayClock(c), outbox.WithLease(lease)}
	p2 := &pub{fail: func(m outbox.Message) error {
		if m.Type == "d.2" {
			return errors.New("broker down")
		}
		return nil
	}}
	r2 := relay(t, db, p2, opts...)
	inV, goV := make(chan struct{}), make(chan struct{})
	bDone := make(chan error, 1)
	var r1 *outbox.Relay
	p1 := &pub{hook: func(m outbox.Message) {
		switch m.Type {
		case "x.1":
			c.Advance(at(0, 16*time.Second).Sub(c.Now())) // x.2 renews x for s0+1
		case "x.2":
			c.Advance(at(1, time.Second).Sub(c.Now()))
			_, err := r2.Drain(ctx) // R2 holds d in s0+1: d.1 out, d.2 fails
			require.NoError(t, err)
			// R2 stops, as its Run's end does (leave): its word goes.
			_, err = db.Collection(outbox.Relays).DeleteMany(ctx, bson.D{{Key: "relay", Value: r2.ID()}})
			require.NoError(t, err)
			c.Advance(at(1, 16*time.Second).Sub(c.Now())) // x.3 renews x for s0+2
		case "x.3":
			c.Advance(at(2, time.Second).Sub(c.Now()))
			setDate(at(0, time.Millisecond)) // v is due between x and d
			v := &order{Status: "v"}
			v.Record("v.1", nil)
			require.NoError(t, orders.Insert(ctx, v))
			go func() { _, err := r1.Drain(ctx); bDone <- err }() // B
			waitClosed(t, inV, "Drain B claims v and d and publishes v.1")
		case "v.1":
			close(inV)
			<-goV
		}
	}}
	r1 = relay(t, db, p1, opts...)
	_, err := r1.Drain(ctx) // A
	close(goV)
	require.NoError(t, err)
	require.NoError(t, <-bDone)
	t.Logf("r1 published %v; r2 published %v", typesOf2(p1.all()), typesOf2(p2.all()))
	all := append(p1.all(), p2.all()...)
	assert.Equal(t, 1, countType(all, "d.1"), "d.1 published once")
}
