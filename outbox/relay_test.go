package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// recorder is a publisher that keeps what it is given, and fails as fail
// says.
type recorder struct {
	mu   sync.Mutex
	msgs []outbox.Message
	fail func(m outbox.Message) error
}

func (p *recorder) Publish(_ context.Context, m outbox.Message) error {
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

func (p *recorder) take() []outbox.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.msgs
	p.msgs = nil
	return out
}

// bySubject groups messages by document, in the order published.
func bySubject(ms []outbox.Message) map[string][]outbox.Message {
	out := map[string][]outbox.Message{}
	for _, m := range ms {
		out[m.Subject] = append(out[m.Subject], m)
	}
	return out
}

func newRelay(t testing.TB, db *mongo.Database, p outbox.Publisher, opts ...outbox.RelayOption) *outbox.Relay {
	t.Helper()
	if atomicRun {
		opts = append(opts, outbox.WithAtomicWrites(true))
	}
	r, err := outbox.NewRelay(db, p, opts...)
	require.NoError(t, err)
	return r
}

// TestDrainDeliversInOrder: every stored event is delivered once, with
// its document's Seq in the order recorded, and the documents are left
// with nothing pending and nothing due.
func TestDrainDeliversInOrder(t *testing.T) { strategies(t, drainDeliversInOrder) }

func drainDeliversInOrder(t *testing.T) {
	orders, db := setup(t, nil)
	var want []string
	var all []*order
	for i := range 3 {
		o := &order{Status: "placed"}
		o.Record("order.placed", placed{N: i})
		want = append(want, o.Recorded()[0].ID)
		require.NoError(t, orders.Insert(ctx, o))
		o.Record("order.paid", nil)
		o.Record("order.shipped", nil)
		require.NoError(t, orders.Save(ctx, o))
		all = append(all, o)
	}
	p := &recorder{}
	relay := newRelay(t, db, p)
	n, err := relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 9, n)
	msgs := p.take()
	require.Len(t, msgs, 9)
	for i, o := range all {
		got := bySubject(msgs)[o.ID.Hex()]
		require.Len(t, got, 3)
		assert.Equal(t, want[i], got[0].ID)
		for j, typ := range []string{"order.placed", "order.paid", "order.shipped"} {
			m := got[j]
			assert.Equal(t, typ, m.Type)
			assert.EqualValues(t, j+1, m.Seq)
			assert.Equal(t, "orders", m.Source)
			assert.Equal(t, 1, m.Attempt)
			assert.False(t, m.Time.IsZero())
		}
		var data placed
		require.NoError(t, bson.Unmarshal(got[0].Data, &data))
		assert.Equal(t, i, data.N)
		s := read(t, db, o.ID)
		assert.Empty(t, s.Box.Queue)
		assert.Nil(t, s.Box.Due, "nothing due")
		assert.EqualValues(t, 3, s.Box.Count, "the Seq count stays")
	}
	n, err = relay.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "delivered once")
	assert.EqualValues(t, 9, relay.Stats().Delivered)

	// The next event of a document continues its Seq.
	all[0].Record("order.refunded", nil)
	require.NoError(t, orders.Save(ctx, all[0]))
	_, err = relay.Drain(ctx)
	require.NoError(t, err)
	msgs = p.take()
	require.Len(t, msgs, 1)
	assert.EqualValues(t, 4, msgs[0].Seq)
}

// TestSaveAfterDeliveryBringsNothingBack: a model loaded before its
// events were delivered, saved after, adds only its new event.
func TestSaveAfterDeliveryBringsNothingBack(t *testing.T) {
	strategies(t, saveAfterDeliveryBringsNothingBack)
}

func saveAfterDeliveryBringsNothingBack(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	require.NoError(t, orders.Insert(ctx, o))
	stale, err := orders.FindByID(ctx, o.ID)
	require.NoError(t, err)
	p := &recorder{}
	relay := newRelay(t, db, p)
	_, err = relay.Drain(ctx)
	require.NoError(t, err)
	require.Len(t, p.take(), 1)

	stale.Status = "paid"
	require.NoError(t, orders.Save(ctx, stale))
	stale.Record("order.paid", nil)
	require.NoError(t, orders.Save(ctx, stale))
	_, err = relay.Drain(ctx)
	require.NoError(t, err)
	msgs := p.take()
	require.Len(t, msgs, 1, "only the new event")
	assert.Equal(t, "order.paid", msgs[0].Type)
	assert.EqualValues(t, 2, msgs[0].Seq)
}

// TestDeleteWithPendingEvents: the events of a deleted document are
// delivered in order, and then the document is removed for good.
func TestDeleteWithPendingEvents(t *testing.T) { strategies(t, deleteWithPendingEvents) }

func deleteWithPendingEvents(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	require.NoError(t, orders.Insert(ctx, o))
	o.Record("order.cancelled", nil)
	require.NoError(t, orders.Delete(ctx, o))
	quiet := &order{Status: "quiet"}
	require.NoError(t, orders.Insert(ctx, quiet))
	require.NoError(t, orders.Delete(ctx, quiet))
	require.True(t, read(t, db, o.ID).Has)
	require.True(t, read(t, db, quiet.ID).Has)

	p := &recorder{}
	relay := newRelay(t, db, p)
	n, err := relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	msgs := p.take()
	require.Len(t, msgs, 2)
	assert.Equal(t, []string{"order.placed", "order.cancelled"}, []string{msgs[0].Type, msgs[1].Type})
	assert.False(t, read(t, db, o.ID).Has, "removed once its events were out")
	assert.False(t, read(t, db, quiet.ID).Has, "a deleted document without events is removed too")
	assert.EqualValues(t, 2, relay.Stats().Removed)
}

// TestRetriesKeepTheOrder: a failing message holds back its document's
// later events, retried once its backoff is over, while other documents
// flow.
func TestRetriesKeepTheOrder(t *testing.T) { strategies(t, retriesKeepTheOrder) }

func retriesKeepTheOrder(t *testing.T) {
	c := fakeclock.New(time.Now())
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	stuck := &order{Status: "stuck"}
	stuck.Record("first", nil)
	stuck.Record("second", nil)
	require.NoError(t, orders.Insert(ctx, stuck))
	other := &order{Status: "other"}
	other.Record("other", nil)
	require.NoError(t, orders.Insert(ctx, other))

	fails := 2
	p := &recorder{fail: func(m outbox.Message) error {
		if m.Type == "first" && fails > 0 {
			fails--
			return errors.New("broker down")
		}
		return nil
	}}
	backoff := time.Minute
	relay := newRelay(t, db, p, outbox.WithBackoff(func(int) time.Duration { return backoff }), outbox.WithRelayClock(c))
	drain := func(want int, why string) {
		t.Helper()
		n, err := relay.Drain(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, n, why)
	}
	drain(1, "the other document")
	msgs := p.take()
	require.Len(t, msgs, 1)
	assert.Equal(t, "other", msgs[0].Type, "no head-of-line blocking across documents")
	drain(0, "in backoff")
	c.Advance(backoff - time.Millisecond)
	drain(0, "in backoff still")
	c.Advance(time.Millisecond)
	drain(0, "the second attempt fails")
	c.Advance(backoff)
	drain(2, "the third attempt goes through, and the next event follows")
	got := p.take()
	require.Len(t, got, 2)
	assert.Equal(t, "first", got[0].Type)
	assert.Equal(t, 3, got[0].Attempt, "the third attempt")
	assert.Equal(t, "second", got[1].Type)
	assert.Equal(t, 1, got[1].Attempt)
	assert.EqualValues(t, 2, relay.Stats().Failed)
}

// TestPoisonMessageIsDeadLettered: a message that always fails moves to
// DeadLetters with its error after MaxAttempts, is counted and logged, and
// the document's next event follows.
func TestPoisonMessageIsDeadLettered(t *testing.T) { strategies(t, poisonMessageIsDeadLettered) }

func poisonMessageIsDeadLettered(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("poison", nil)
	o.Record("after", nil)
	poison := o.Recorded()[0].ID
	require.NoError(t, orders.Insert(ctx, o))
	p := &recorder{fail: func(m outbox.Message) error {
		if m.Type == "poison" {
			return errors.New("cannot encode for the broker")
		}
		return nil
	}}
	var logs bytes.Buffer
	relay := newRelay(t, db, p, outbox.WithMaxAttempts(3), outbox.WithBackoff(func(int) time.Duration { return 0 }),
		outbox.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	for range 3 {
		_, err := relay.Drain(ctx)
		require.NoError(t, err)
	}
	msgs := p.take()
	require.Len(t, msgs, 1)
	assert.Equal(t, "after", msgs[0].Type)
	assert.EqualValues(t, 2, msgs[0].Seq)

	var dead bson.M
	require.NoError(t, db.Collection(outbox.DeadLetters).FindOne(ctx, bson.D{{Key: "_id", Value: poison}}).Decode(&dead))
	assert.Equal(t, "cannot encode for the broker", dead["error"])
	assert.EqualValues(t, 3, dead["attempts"])
	assert.Equal(t, "poison", dead["type"])
	st := relay.Stats()
	assert.EqualValues(t, 1, st.DeadLettered)
	assert.EqualValues(t, 1, st.DeadLetters)
	assert.Contains(t, logs.String(), "dead letters")
	assert.Empty(t, read(t, db, o.ID).Box.Queue)
}

// TestLeasesKeepOtherRelaysOut: while one relay holds a document (its
// publisher failing), another does not publish it; once the lease is over,
// the other delivers it.
func TestLeasesKeepOtherRelaysOut(t *testing.T) {
	c := fakeclock.New(time.Now())
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	require.NoError(t, orders.Insert(ctx, o))
	lease := 2 * time.Second
	down := &recorder{fail: func(outbox.Message) error { return errors.New("down") }}
	a := newRelay(t, db, down, outbox.WithLease(lease), outbox.WithBackoff(func(int) time.Duration { return 0 }), outbox.WithRelayClock(c))
	p := &recorder{}
	b := newRelay(t, db, p, outbox.WithLease(lease), outbox.WithRelayClock(c))
	_, err := a.Drain(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 1, a.Stats().Failed)
	n, err := b.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a holds the document")
	c.Advance(2 * lease) // a's slot and the next one, which a claims late in the first, are over
	n, err = b.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "a's lease is over")
	msgs := p.take()
	assert.Equal(t, 2, msgs[0].Attempt, "the attempt a made counts")
}

// TestRunDeliversUntilCancelled: Run delivers what is written while it
// polls and returns nil when its context ends.
func TestRunDeliversUntilCancelled(t *testing.T) {
	orders, db := setup(t, nil)
	p := &recorder{}
	relay := newRelay(t, db, p, outbox.WithPollInterval(10*time.Millisecond))
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- relay.Run(rctx) }()
	for i := range 5 {
		o := &order{}
		o.Record("order.placed", placed{N: i})
		require.NoError(t, orders.Insert(ctx, o))
	}
	require.Eventually(t, func() bool { return relay.Stats().Delivered == 5 }, 30*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Len(t, p.take(), 5)
}

// TestRelayIndexesDue: the relay finds pending documents through an index
// on due, which it creates.
func TestRelayIndexesDue(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{}
	o.Record("x", nil)
	require.NoError(t, orders.Insert(ctx, o))
	_, err := newRelay(t, db, &recorder{}).Drain(ctx)
	require.NoError(t, err)
	specs, err := db.Collection("orders").Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	assert.Contains(t, names, "outbox_due")
}

// TestEventAddedDuringDelivery: an event a writer adds while a relay
// delivers the document's earlier ones is neither lost nor removed.
func TestEventAddedDuringDelivery(t *testing.T) { strategies(t, eventAddedDuringDelivery) }

func eventAddedDuringDelivery(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("first", nil)
	require.NoError(t, orders.Insert(ctx, o))
	p := &recorder{}
	p.fail = func(m outbox.Message) error {
		if m.Type == "first" {
			o.Record("added", nil)
			return orders.Save(ctx, o)
		}
		return nil
	}
	relay := newRelay(t, db, p)
	n, err := relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"added"}, typesOf(read(t, db, o.ID)), "the added event stays")
	_, err = relay.Drain(ctx)
	require.NoError(t, err)
	msgs := p.take()
	require.Len(t, msgs, 2)
	assert.Equal(t, "added", msgs[1].Type)
	assert.EqualValues(t, 2, msgs[1].Seq)
}

// typesOf returns the types of a stored document's pending events.
func typesOf(s stored) []string {
	var out []string
	for _, id := range s.Box.Queue {
		out = append(out, s.Box.Events[id]["t"].(string))
	}
	return out
}

// TestExpiredRelayRemovesOnlyWhatItPublished: a relay whose lease runs
// out while it publishes gives up on the publish and stops publishing, and
// neither its removal nor the publish that returns late takes what the
// relay that holds the document now has not delivered.
func TestExpiredRelayRemovesOnlyWhatItPublished(t *testing.T) {
	strategies(t, expiredRelayRemovesOnlyWhatItPublished)
}

func expiredRelayRemovesOnlyWhatItPublished(t *testing.T) {
	c := fakeclock.New(time.Now())
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	o := &order{Status: "placed"}
	o.Record("one", nil)
	o.Record("two", nil)
	require.NoError(t, orders.Insert(ctx, o))
	lease := 3 * time.Second
	started, release := make(chan struct{}), make(chan struct{})
	slow := &recorder{fail: func(m outbox.Message) error {
		close(started)
		<-release // stalls past its lease
		return nil
	}}
	a := newRelay(t, db, slow, outbox.WithLease(lease), outbox.WithRelayClock(c))
	aDone := make(chan error)
	go func() { _, err := a.Drain(ctx); aDone <- err }()
	waitClosed(t, started, "a publishes")
	c.Advance(2 * lease) // past the deadline of a's publish (late in a slot, a holds the next one too), which a gives up on
	require.NoError(t, <-aDone)
	assert.EqualValues(t, 1, a.Stats().Hung, "a's publish still runs")

	p := &recorder{}
	b := newRelay(t, db, p, outbox.WithLease(lease), outbox.WithRelayClock(c))
	n, err := b.Drain(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "the failed attempt's backoff")
	c.Advance(time.Minute) // the backoff and a's leases are over
	n, err = b.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "b takes over once a's lease is over")
	o.Record("three", nil)
	require.NoError(t, orders.Save(ctx, o))
	close(release)
	require.Eventually(t, func() bool { return a.Stats().Hung == 0 }, time.Minute, time.Millisecond, "a's publish returns")
	assert.Equal(t, []string{"one"}, typesOf2(slow.take()), "a stopped publishing when its lease ended")
	assert.Equal(t, []string{"three"}, typesOf(read(t, db, o.ID)), "a's removal took nothing it had not published")
	_, err = b.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two", "three"}, typesOf2(p.take()))
}

func typesOf2(ms []outbox.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Type)
	}
	return out
}

// TestRelayCountsPending: a Drain counts the undelivered events of the
// collections it serves, in backoff or not, and when the oldest of them was
// recorded; once it has delivered them, it counts none.
func TestRelayCountsPending(t *testing.T) {
	orders, db := setup(t, nil)
	first := &order{Status: "placed"}
	first.Record("one", nil)
	first.Record("two", nil)
	oldest := first.Recorded()[0].Time
	require.NoError(t, orders.Insert(ctx, first))
	second := &order{Status: "placed"}
	second.Record("three", nil)
	require.NoError(t, orders.Insert(ctx, second))

	var down atomic.Bool
	down.Store(true)
	p := &recorder{fail: func(outbox.Message) error {
		if down.Load() {
			return errors.New("broker down")
		}
		return nil
	}}
	relay := newRelay(t, db, p, outbox.WithBackoff(func(int) time.Duration { return time.Hour }), outbox.WithCountEvery(0))
	assert.Zero(t, relay.Stats().Pending, "nothing counted before a Drain")
	for range 2 { // the second finds the documents in backoff, and counts them still
		_, err := relay.Drain(ctx)
		require.NoError(t, err)
		st := relay.Stats()
		assert.EqualValues(t, 3, st.Pending)
		assert.Equal(t, oldest, st.Oldest)
	}
	assert.Empty(t, p.take())
	assert.EqualValues(t, 2, relay.Stats().Failed, "the second Drain tries nothing: the documents wait")

	down.Store(false)
	_, err := orders.Collection().UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: outbox.Field + ".hold", Value: time.Now().Add(-time.Second)}}}})
	require.NoError(t, err) // the backoff ends
	for range 3 {
		_, err = relay.Drain(ctx)
		require.NoError(t, err)
	}
	assert.Len(t, p.take(), 3)
	st := relay.Stats()
	assert.Zero(t, st.Pending)
	assert.True(t, st.Oldest.IsZero())
}

// TestRelayKeepsItsLeasesWhileItWorks: a relay that has not measured its
// pace yet claims a chunk of ten documents, whose delivery outlasts the
// lease (each publish takes an eighth of it); it delivers the whole chunk,
// renewing its leases as they near their end, while a second relay,
// draining at every publish of the first, takes the rest of the backlog
// and none of the chunk. Every document is delivered once.
func TestRelayKeepsItsLeasesWhileItWorks(t *testing.T) {
	strategies(t, relayKeepsItsLeasesWhileItWorks)
}

func relayKeepsItsLeasesWhileItWorks(t *testing.T) {
	c := fakeclock.New(time.Now())
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	const docs, chunk = 20, 10
	for i := range docs {
		o := &order{Status: "placed"}
		o.Record("order.placed", placed{N: i})
		require.NoError(t, orders.Insert(ctx, o))
	}
	lease := 8 * time.Second
	other := &recorder{}
	b := newRelay(t, db, other, outbox.WithLease(lease), outbox.WithRelayClock(c))
	var tried []int
	slow := &recorder{fail: func(outbox.Message) error {
		c.Advance(lease / 8)
		n, err := b.Drain(ctx) // the other relay, at every publish
		tried = append(tried, n)
		return err
	}}
	a := newRelay(t, db, slow, outbox.WithLease(lease), outbox.WithRelayClock(c))
	n, err := a.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, chunk, n, "one Drain delivers the first chunk, over %v of a %v lease", chunk*lease/8, lease)
	mine, others := slow.take(), other.take()
	assert.Len(t, mine, chunk)
	assert.Len(t, others, docs-chunk, "the other relay takes the rest: %v", tried)
	seen := map[string]int{}
	for _, m := range append(mine, others...) {
		seen[m.Subject]++
	}
	assert.Len(t, seen, docs, "every document is delivered")
	for subject, k := range seen {
		assert.Equal(t, 1, k, "document %s delivered by both relays", subject)
	}
	assert.Zero(t, a.Stats().Failed)
}
