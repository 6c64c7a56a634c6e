package outbox_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
)

// shareLease is the lease of the tests of this file, which drive the
// clock.
const shareLease = 30 * time.Second

// pair is two relays serving orders: R1, whose reads of due documents
// reads counts, and R2, which said it serves orders and does nothing more.
type pair struct {
	c       *fakeclock.Clock
	orders  *repo.Repository[*order]
	db      *mongo.Database
	r1, r2  *outbox.Relay
	p       *pub // R1's
	reads   *atomic.Int64
	members []string
}

// newPair returns the pair; R1 takes more, its own, options.
func newPair(t *testing.T, more ...outbox.RelayOption) *pair {
	t.Helper()
	s := &pair{c: fakeclock.New(slotStart(shareLease)), p: &pub{}, reads: &atomic.Int64{}}
	s.orders, s.db = defendSetup(t, outbox.WithClock(s.c.Now))
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "find" && e.Command.Lookup("find").StringValue() == "orders" {
			if _, ok := e.Command.Lookup("sort").DocumentOK(); ok { // the read of due documents
				s.reads.Add(1)
			}
		}
	}}
	opts := []outbox.RelayOption{outbox.WithCollections("orders"), outbox.WithRelayClock(s.c), outbox.WithLease(shareLease)}
	s.r1 = relay(t, monitored(t, s.db, mon), s.p, append(opts, more...)...)
	s.r2 = relay(t, s.db, &pub{}, opts...)
	_, err := s.r2.Drain(ctx) // R2 says it serves orders
	require.NoError(t, err)
	s.members = []string{s.r1.ID(), s.r2.ID()}
	return s
}

// ordersOf stores n orders with one event each that fall to relay r, due
// one millisecond apart, oldest first.
func (s *pair) ordersOf(t *testing.T, r *outbox.Relay, n int) []*order {
	t.Helper()
	coll := s.db.Collection("orders")
	var out []*order
	for len(out) < n {
		s.c.Advance(time.Millisecond)
		o := &order{Status: "placed"}
		o.Record(fmt.Sprint("e", len(out)), nil)
		require.NoError(t, s.orders.Insert(ctx, o))
		if outbox.OwnerOfLease(outbox.LeaseKey(coll, o.ID)+"@0", s.members) == r.ID() {
			out = append(out, o)
			continue
		}
		_, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: o.ID}})
		require.NoError(t, err)
	}
	return out
}

// heldByR2 stores R2's lease of o for the current slot.
func (s *pair) heldByR2(t *testing.T, o *order) {
	t.Helper()
	slot := s.c.Now().UnixNano() / int64(shareLease)
	_, err := s.db.Collection(outbox.Leases).InsertOne(ctx, bson.D{
		{Key: "_id", Value: fmt.Sprintf("%s@%d", outbox.LeaseKey(s.db.Collection("orders"), o.ID), slot)},
		{Key: "by", Value: s.r2.ID()}, {Key: "until", Value: time.Unix(0, (slot+1)*int64(shareLease))}})
	require.NoError(t, err)
}

// TestRelayTakesTheOthersShareFromItsRead: a relay whose read holds every
// due document delivers its share and then what the other relays have not
// claimed of theirs, from the same read: reading them again would be a
// scan of the collection on FerretDB. R1 delivers y, its share, and x,
// R2's, which R2 has not claimed, in one read.
func TestRelayTakesTheOthersShareFromItsRead(t *testing.T) {
	s := newPair(t)
	x := s.ordersOf(t, s.r2, 1)[0]
	y := s.ordersOf(t, s.r1, 1)[0]

	n, err := s.r1.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, 0, queueLen(t, s.db, x.ID)+queueLen(t, s.db, y.ID), "x and y are out")
	assert.Equal(t, int64(1), s.reads.Load(), "R1 reads the due documents once")
}

// TestRelayTakesWhatALaggingRelayLeavesFree: the documents of another
// relay that it has not claimed, while it holds others, wait a few poll
// intervals at most for a relay that has none of its own: each of its
// Drains stops where its claims meet the other's four times, and leaves
// the documents it found held out of its next reads. All forty documents
// fall to R2, which holds thirty of them; R1 delivers the other ten, and
// none of R2's, within eight Drains, a poll interval apart. R1 starts each
// chunk after a collision where the last one ended, so that the count
// does not depend on chance.
func TestRelayTakesWhatALaggingRelayLeavesFree(t *testing.T) {
	s := newPair(t, outbox.WithPlace(func(int) int { return 0 }))
	xs := s.ordersOf(t, s.r2, 40)
	held := map[any]bool{}
	for i, o := range xs {
		if i%4 != 0 {
			s.heldByR2(t, o)
			held[o.ID] = true
		}
	}

	drains, n := 0, 0
	for n < 10 && drains < 20 {
		m, err := s.r1.Drain(ctx)
		require.NoError(t, err)
		n, drains = n+m, drains+1
		s.c.Advance(time.Second) // a poll interval
	}
	assert.Equal(t, 10, n, "R1 delivers every document R2 has not claimed")
	assert.LessOrEqual(t, drains, 8)
	assert.Len(t, s.p.all(), n)
	for _, o := range xs {
		if held[o.ID] {
			assert.Equal(t, 1, queueLen(t, s.db, o.ID), "R1 publishes none of what R2 holds")
		}
	}
}

// TestRelayTakingOthersLeavesWhatTheyWorkOn: a relay that claims the
// documents of other relays, having none of its own, stops where its
// claims keep meeting theirs, and leaves the rest to them and to its next
// poll, instead of reading the collection again. All ten documents fall
// to R2, which holds six of them; R1 takes what it can of the other four
// in one read, and publishes none of R2's.
func TestRelayTakingOthersLeavesWhatTheyWorkOn(t *testing.T) {
	s := newPair(t)
	xs := s.ordersOf(t, s.r2, 10)
	held := map[any]bool{}
	for i, o := range xs { // the newest is free, so that R1's first claim gets one
		if i%2 == 0 || i == 1 {
			s.heldByR2(t, o)
			held[o.ID] = true
		}
	}

	n, err := s.r1.Drain(ctx)
	require.NoError(t, err)
	assert.Positive(t, n)
	assert.LessOrEqual(t, n, 4)
	assert.Len(t, s.p.all(), n)
	for _, o := range xs {
		if held[o.ID] {
			assert.Equal(t, 1, queueLen(t, s.db, o.ID), "R1 publishes none of what R2 holds")
		}
	}
	assert.Equal(t, int64(1), s.reads.Load(), "R1 reads the due documents once")
}

// TestRunWaitsWhenOthersHoldWhatIsLeft: a relay's Run drains again at once
// after a Drain that delivered, but not after one that ended on due
// documents other relays hold: reading them again, a scan of the
// collection on FerretDB, would only find them held, and slow down the
// relays that work on them. R1 reads y, its share, and x, R2's, delivers
// y, finds x held by R2, and then waits its poll interval: one read of due
// documents, not two.
func TestRunWaitsWhenOthersHoldWhatIsLeft(t *testing.T) {
	s := newPair(t)
	x := s.ordersOf(t, s.r2, 1)[0]
	y := s.ordersOf(t, s.r1, 1)[0]
	s.heldByR2(t, x)

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.r1.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)           // real time, far more than the Drain needs
	for queueLen(t, s.db, y.ID) > 0 || s.c.Timers() == 0 { // y is out, and Run waits
		require.True(t, time.Now().Before(deadline), "R1 delivers y and waits its poll interval")
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	require.Len(t, s.p.all(), 1)
	assert.Equal(t, 1, queueLen(t, s.db, x.ID), "x is R2's")
	assert.Equal(t, int64(1), s.reads.Load(), "R1 reads due documents once")
}
