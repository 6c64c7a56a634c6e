package outbox_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestDefendWritesDefeatBackoff: a failed publish sets the document's due
// to now+backoff, but every later write of the document sets due back to
// now ($min), so a busy document retries its failing head at the write
// rate: with a one-hour backoff and MaxAttempts 3, three writes send the
// head to dead letters within a second.
func TestDefendWritesDefeatBackoff(t *testing.T) {
	orders, db := defendSetup(t)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	head := o.Recorded()[0].ID
	require.NoError(t, orders.Insert(ctx, o))
	p := &pub{fail: func(m outbox.Message) error {
		if m.ID == head {
			return errors.New("broker hiccup")
		}
		return nil
	}}
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithMaxAttempts(3),
		outbox.WithBackoff(func(int) time.Duration { return time.Hour }))
	for i := range 4 {
		_, err := r.Drain(ctx)
		require.NoError(t, err)
		o.Status = "busy"
		o.Record("order.touched", bson.D{{Key: "i", Value: i}})
		require.NoError(t, orders.Save(ctx, o))
	}
	st := r.Stats()
	t.Logf("stats: %+v", st)
	assert.EqualValues(t, 1, st.Failed, "one attempt per hour of backoff")
	assert.Zero(t, st.DeadLettered, "no dead letter within the first hour")
}

var _ sync.Mutex

// TestDefendConcurrentDrainsOfOneRelayDuplicate: Relay is documented safe
// for concurrent use, but two Drains of one relay share its leases, so
// both deliver the same document at once: every message is published
// twice though no relay died.
func TestDefendConcurrentDrainsOfOneRelayDuplicate(t *testing.T) {
	orders, db := defendSetup(t)
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	o.Record("e2", nil)
	require.NoError(t, orders.Insert(ctx, o))
	entered := make(chan struct{}, 8)
	second := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	calls := 0
	p := &pub{hook: func(outbox.Message) {
		entered <- struct{}{}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 { // the first Drain waits inside Publish for the second
			select {
			case <-second:
			case <-time.After(2 * time.Second):
			}
		} else {
			once.Do(func() { close(second) })
		}
	}}
	r := relay(t, db, p, outbox.WithCollections("orders"))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = r.Drain(ctx) }()
	waitClosed(t, entered, "the first Drain holds the document and publishes")
	go func() { defer wg.Done(); _, _ = r.Drain(ctx) }()
	wg.Wait()
	msgs := p.all()
	assert.Len(t, msgs, 2, "e1 and e2 published once each: %v", msgs)
}

// TestDefendHungPublishBlocksOtherDocuments: a publish that hangs on one
// document's message (a broker stuck on one subject) would hold the relay
// past its lease, and every other document would wait: head-of-line
// blocking across documents, and publishing after the lease ended. The
// relay gives up on it at its lease's end, and y's event follows.
func TestDefendHungPublishBlocksOtherDocuments(t *testing.T) {
	c := fakeclock.New(time.Now())
	orders, db := defendSetup(t, outbox.WithClock(c.Now))
	insertXY(t, orders, c)
	hang := make(chan struct{})
	defer close(hang)
	xin, ydone := make(chan struct{}, 1), make(chan struct{})
	p := &pub{hook: func(m outbox.Message) {
		if m.Type == "x.1" {
			select {
			case xin <- struct{}{}:
			default:
			}
			<-hang
		}
		if m.Type == "y.1" {
			close(ydone)
		}
	}}
	lease := 5 * time.Second
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithLease(lease),
		outbox.WithPollInterval(200*time.Millisecond), outbox.WithRelayClock(c))
	rctx, cancel := contextWithCancel()
	defer cancel()
	go func() { _ = r.Run(rctx) }()
	waitClosed(t, xin, "x's publish starts, and hangs")
	select {
	case <-ydone:
		t.Fatal("y's event went first")
	default:
	}
	defer c.Drive()() // time passes as the relay waits: x's lease ends, Run polls
	waitClosed(t, ydone, "y's event follows once x's lease is over")
	assert.NotZero(t, r.Stats().Hung, "x's publish was given up on")
}

// TestDefendLeasesOfRelaysWithOtherLeaseLengths: a lease's _id names a
// slot of the relay's WithLease length, so two relays with different
// lengths (a rolling deploy that changes the setting) would never collide
// on an _id, and both would deliver one document at once. The first relay
// records its length; the other's Drain is refused and publishes nothing.
func TestDefendLeasesOfRelaysWithOtherLeaseLengths(t *testing.T) {
	orders, db := defendSetup(t)
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	require.NoError(t, orders.Insert(ctx, o))
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	p := &pub{hook: func(outbox.Message) {
		started <- struct{}{}
		select {
		case <-release:
		case <-time.After(time.Second):
		}
	}}
	a := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithLease(30*time.Second))
	b := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithLease(45*time.Second))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range []*outbox.Relay{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = r.Drain(ctx) }()
	}
	waitClosed(t, started, "a relay publishes")
	select {
	case <-started:
	case <-time.After(700 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	msgs := p.all()
	assert.Len(t, msgs, 1, "one relay holds the document; the message is published once: %v", msgs)
	lengths := []time.Duration{30 * time.Second, 45 * time.Second}
	refused, won := 0, time.Duration(0)
	for i, err := range errs {
		if err == nil {
			won = lengths[i]
			continue
		}
		assert.ErrorIs(t, err, outbox.ErrInvalidRelay)
		refused++
	}
	require.Equal(t, 1, refused, "the relay with the other length is refused: %v", errs)
	for _, err := range errs {
		if err != nil {
			assert.ErrorContains(t, err, fmt.Sprintf("lease for %v", won))
		}
	}

	c := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithLease(won))
	_, err := c.Drain(ctx)
	assert.NoError(t, err, "a relay with the recorded length drains")
}

// TestHungPublishesAreBounded: a Publish that ignores its context is
// abandoned at its deadline, and its goroutine runs on until it returns.
// Once MaxHungPublishes (here 2) of them run, the relay starts no more
// publishes, and Drain fails with ErrPublishHung, instead of leaving one
// more goroutine behind for every message. When they return, the relay
// publishes again.
func TestHungPublishesAreBounded(t *testing.T) {
	orders, db := defendSetup(t)
	placeOrders(t, orders, 4)
	hang := make(chan struct{})
	var hanging atomic.Bool
	hanging.Store(true)
	p := &pub{hook: func(outbox.Message) {
		if hanging.Load() {
			<-hang // ignores its context
		}
	}}
	c := fakeclock.New(time.Now())
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithLease(3*time.Second),
		outbox.WithBackoff(func(int) time.Duration { return 0 }), outbox.WithMaxHung(2), outbox.WithRelayClock(c))
	// A Drain abandons a publish at the end of its lease's slot, and the
	// document's other events wait for a later slot.
	stop := c.Drive()
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = r.Drain(ctx)
	}
	stop()
	require.ErrorIs(t, err, outbox.ErrPublishHung)
	assert.ErrorContains(t, err, "Publish must return when its context ends")
	assert.Equal(t, int64(2), r.Stats().Hung, "two publishes abandoned, and no third started")
	assert.Equal(t, int64(2), r.Stats().Failed)

	hanging.Store(false)
	close(hang)
	require.Eventually(t, func() bool { return r.Stats().Hung == 0 }, 5*time.Second, 10*time.Millisecond,
		"the abandoned publishes returned")
	n := 0
	for range 50 {
		d, err := r.Drain(ctx)
		require.NoError(t, err)
		if n += d; n == 4 {
			break
		}
		c.Advance(200 * time.Millisecond)
	}
	assert.Equal(t, 4, n, "every event is delivered once the publishes return")
}

// TestHungBoundAcrossDrains: concurrent Drains of one relay share the
// bound, so with WithMaxHung(1) six of them leave at most one Publish
// running, not one each.
func TestHungBoundAcrossDrains(t *testing.T) {
	orders, db := defendSetup(t)
	placeOrders(t, orders, 6)
	hang := make(chan struct{})
	var running, most atomic.Int64
	p := &pub{hook: func(outbox.Message) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-hang // ignores its context
		running.Add(-1)
	}}
	c := fakeclock.New(time.Now())
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithLease(6*time.Second),
		outbox.WithBackoff(func(int) time.Duration { return 0 }), outbox.WithMaxHung(1), outbox.WithBatch(1), outbox.WithRelayClock(c))
	stop := c.Drive()
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = r.Drain(ctx) }()
	}
	wg.Wait()
	stop()
	st := r.Stats()
	close(hang)
	assert.LessOrEqual(t, st.Hung, int64(1), "abandoned publishes still running")
	assert.LessOrEqual(t, most.Load(), int64(1), "Publish calls running at once")
	require.Eventually(t, func() bool { return r.Stats().Hung == 0 }, 5*time.Second, 10*time.Millisecond)
}

// TestHungBoundThenAllArrive: six documents of three events each, a
// Publisher that hangs on every other call, a bound of 2: once the hung
// publishes return, every event arrives, none is dead-lettered, and the
// documents are emptied.
func TestHungBoundThenAllArrive(t *testing.T) {
	orders, db := defendSetup(t)
	const docs, evs = 6, 3
	for i := range docs {
		o := &order{Status: "placed"}
		for j := range evs {
			o.Record(fmt.Sprintf("d%d.e%d", i, j), nil)
		}
		require.NoError(t, orders.Insert(ctx, o))
	}
	hang := make(chan struct{})
	var calls atomic.Int64
	p := &pub{hook: func(outbox.Message) {
		if calls.Add(1)%2 == 1 {
			<-hang
		}
	}}
	c := fakeclock.New(time.Now())
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithLease(3*time.Second),
		outbox.WithBackoff(func(int) time.Duration { return 0 }), outbox.WithMaxHung(2), outbox.WithMaxAttempts(50),
		outbox.WithRelayClock(c))
	stop := c.Drive()
	var err error
	for i := 0; i < 30 && err == nil; i++ {
		_, err = r.Drain(ctx)
	}
	stop()
	require.ErrorIs(t, err, outbox.ErrPublishHung)
	close(hang)
	require.Eventually(t, func() bool { return r.Stats().Hung == 0 }, 5*time.Second, 10*time.Millisecond)
	for range 100 {
		_, err := r.Drain(ctx)
		require.NoError(t, err)
		n, err := db.Collection("orders").CountDocuments(ctx, bson.M{"_outbox.q.0": bson.M{"$exists": true}})
		require.NoError(t, err)
		if n == 0 {
			break
		}
		c.Advance(200 * time.Millisecond)
	}
	assert.Zero(t, r.Stats().DeadLettered)
	got := map[string]bool{}
	for _, m := range p.all() {
		got[m.Type] = true
	}
	assert.Len(t, got, docs*evs, "every event arrives")
}

// placeOrders inserts n orders recording one event each, e0, e1, ….
func placeOrders(t *testing.T, orders *repo.Repository[*order], n int) {
	t.Helper()
	for i := range n {
		o := &order{Status: "placed"}
		o.Record(fmt.Sprintf("e%d", i), nil)
		require.NoError(t, orders.Insert(ctx, o))
	}
}

// TestPublishPanicIsAFailedAttempt: a Publish that panics fails its
// attempt, with the panic in the error, instead of ending the process; the
// message is retried, and the relay's counts are back at zero.
func TestPublishPanicIsAFailedAttempt(t *testing.T) {
	orders, db := defendSetup(t)
	placeOrders(t, orders, 1)
	var calls atomic.Int64
	p := &pub{hook: func(outbox.Message) {
		if calls.Add(1) == 1 {
			panic("broker client bug")
		}
	}}
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithBackoff(func(int) time.Duration { return 0 }))
	n, err := r.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, int64(1), r.Stats().Failed)
	var doc bson.M
	require.NoError(t, db.Collection("orders").FindOne(ctx, bson.D{}).Decode(&doc))
	assert.Contains(t, fmt.Sprint(doc["_outbox"]), "Publish panicked: broker client bug", "the attempt's error is stored")
	n, err = r.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "retried and delivered")
	assert.Zero(t, r.Stats().Hung)
}
