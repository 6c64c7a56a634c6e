package outbox_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestDrainLeavesWhatAnotherDrainDeliveredSinceItsRead: two Drains of one
// relay share its leases, so that a lease does not tell one Drain that
// the other delivered from a document after it read it. Drain A reads x
// and y, claims x alone (a pace of a lease per document makes chunks of
// one) and waits in x's publish; Drain B reads both, skips x, which A
// works on, and delivers y. When A goes on, it holds y's lease, the
// relay's own, and what it read of y is stale: publishing y.1 from it
// would publish y.1 twice. A leaves y instead.
func TestDrainLeavesWhatAnotherDrainDeliveredSinceItsRead(t *testing.T) {
	c := fakeclock.New(time.Now())
	orders, db := defendSetup(t, outbox.WithClock(c.Now))
	insertXY(t, orders, c)

	inX, bDone := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p := &pub{hook: func(m outbox.Message) {
		if m.Type == "x.1" {
			once.Do(func() { close(inX) })
			select { // real time, 10× what B needs
			case <-bDone:
			case <-time.After(20 * time.Second):
			}
		}
	}}
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithRelayClock(c))
	r.SetPace(time.Hour)
	a := make(chan error, 1)
	go func() { _, err := r.Drain(ctx); a <- err }()
	waitClosed(t, inX, "Drain A publishes x.1")
	_, err := r.Drain(ctx) // B
	require.NoError(t, err)
	close(bDone)
	require.NoError(t, <-a)

	n := 0
	for _, m := range p.all() {
		if m.Type == "y.1" {
			n++
		}
	}
	assert.Equal(t, 1, n, "y.1 published once: %v", p.all())
}

// TestDrainLeavesWhatItsRelayClaimedFromALaterRead: Drain A reads x, y, w
// and d (chunks of one), then another relay, X, holds d in that slot and
// delivers d.1 (done here by hand: its lease, and the removal). In the
// next slot, A works on y while Drain B, of the same relay, reads y, w
// and d, claims w and d for that slot and waits in w's publish. The
// relay now holds d, but from B's read on: what A read of d is stale
// (d.1 is out), and no stamp says so, since B has not worked on d yet.
// A leaves w and d to B, which delivers d.2: d.1 is not published again.
func TestDrainLeavesWhatItsRelayClaimedFromALaterRead(t *testing.T) {
	const lease = 30 * time.Second
	// At the start of a slot, so that A's claims are of that slot alone.
	c := fakeclock.New(time.Unix(0, (time.Now().UnixNano()/int64(lease)+1)*int64(lease)))
	orders, db := defendSetup(t, outbox.WithClock(c.Now))
	var ids []any
	for _, types := range [][]string{{"x.1"}, {"y.1"}, {"w.1"}, {"d.1", "d.2"}} {
		o := &order{Status: types[0][:1]}
		for _, typ := range types {
			o.Record(typ, nil)
		}
		require.NoError(t, orders.Insert(ctx, o))
		ids = append(ids, o.ID)
		c.Advance(time.Millisecond) // due in this order
	}
	d := ids[3]

	inX, inY, inW := make(chan struct{}), make(chan struct{}), make(chan struct{})
	goY, goW, hang := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer close(hang)
	wait := func(in, out chan struct{}) {
		close(in)
		select { // real time, 10× what the others need
		case <-out:
		case <-time.After(20 * time.Second):
		}
	}
	p := &pub{hook: func(m outbox.Message) {
		switch m.Type {
		case "x.1": // given up on at the end of its slot
			wait(inX, hang)
		case "y.1":
			wait(inY, goY)
		case "w.1":
			wait(inW, goW)
		}
	}}
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithRelayClock(c), outbox.WithLease(lease))
	r.SetPace(time.Hour)
	a := make(chan error, 1)
	go func() { _, err := r.Drain(ctx); a <- err }()
	waitClosed(t, inX, "Drain A publishes x.1")

	// X holds d in this slot and delivers d.1.
	slot := c.Now().UnixNano() / int64(lease)
	end := time.Unix(0, (slot+1)*int64(lease))
	_, err := db.Collection(outbox.Leases).InsertOne(ctx, bson.D{
		{Key: "_id", Value: fmt.Sprintf("%s@%d", outbox.LeaseKey(db.Collection("orders"), d), slot)},
		{Key: "by", Value: "x"}, {Key: "until", Value: end}})
	require.NoError(t, err)
	first := box(t, db, d)["q"].(bson.A)[0].(string)
	_, err = db.Collection("orders").UpdateOne(ctx, bson.D{{Key: "_id", Value: d}}, bson.D{
		{Key: "$pull", Value: bson.D{{Key: outbox.Field + ".q", Value: first}}},
		{Key: "$unset", Value: bson.D{{Key: outbox.Field + ".e." + first, Value: ""}}}})
	require.NoError(t, err)

	c.Advance(end.Sub(c.Now()) + time.Millisecond) // A gives up on x.1 and works on y
	waitClosed(t, inY, "Drain A publishes y.1, in the next slot")
	r.SetPace(time.Nanosecond) // chunks of all that is left
	b := make(chan error, 1)
	go func() { _, err := r.Drain(ctx); b <- err }()
	waitClosed(t, inW, "Drain B claims w and d and publishes w.1")
	close(goY)
	require.NoError(t, <-a)
	close(goW)
	require.NoError(t, <-b)

	count := map[string]int{}
	for _, m := range p.all() {
		count[m.Type]++
	}
	assert.Equal(t, 0, count["d.1"], "d.1, which X delivered, is not published again: %v", count)
	assert.Equal(t, 1, count["d.2"], "d.2 published once: %v", count)
	assert.Equal(t, 0, queueLen(t, db, d))
}
