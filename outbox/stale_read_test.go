package outbox_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/event"
)

// TestRelayClaimsNothingFromAReadTwoSlotsOld: relay X reads an order of
// its share in slot s0; relay Y delivers it in s0+1; X checks its read's
// age 5 ms before s0+1 ends, then reads which relays serve the orders
// (10 ms), and claims in s0+2. That claim holds nothing, whatever the
// caller checked: X never publishes the event again from its stale read.
// Found by a cold review; it failed (the event published twice) before
// the claim refused reads two slots old.
func TestRelayClaimsNothingFromAReadTwoSlotsOld(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	var mu sync.Mutex
	var started, succeeded [2]func(name, coll string)
	mon := func(i int) *event.CommandMonitor {
		get := func(hs *[2]func(string, string)) func(string, string) { mu.Lock(); defer mu.Unlock(); return hs[i] }
		return &event.CommandMonitor{
			Started: func(_ context.Context, e *event.CommandStartedEvent) {
				if h := get(&started); h != nil {
					coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
					h(e.CommandName, coll)
				}
			},
			Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
				if h := get(&succeeded); h != nil {
					h(e.CommandName, "")
				}
			},
		}
	}
	opts := []outbox.RelayOption{outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"), outbox.WithCountEvery(time.Hour)}
	ps := [2]*recorder{{}, {}}
	rs := [2]*outbox.Relay{newRelay(t, monitored(t, db, mon(0)), ps[0], opts...), newRelay(t, monitored(t, db, mon(1)), ps[1], opts...)}
	for _, r := range rs {
		_, err := r.Drain(ctx)
		require.NoError(t, err)
	}
	c.Advance(lease / 20)
	_, err := rs[0].Drain(ctx)
	require.NoError(t, err)

	o := &order{Status: "placed"}
	o.Record("e0", nil)
	require.NoError(t, orders.Insert(ctx, o))
	members := []string{rs[0].ID(), rs[1].ID()}
	slices.Sort(members)
	x := 0
	if outbox.OwnerOfLease("6:orders|o:"+o.ID.Hex()+"@0", members) != rs[0].ID() {
		x = 1
	}
	y := 1 - x
	s0 := c.Now().UnixNano() / int64(lease)
	until := func(slot int64, off time.Duration) time.Duration {
		return time.Unix(0, slot*int64(lease)).Add(off).Sub(c.Now())
	}
	phase := 0
	started[x] = func(name, coll string) {
		switch {
		case phase == 0 && name == "find" && coll == "orders":
			phase = 1
		case phase == 2 && name == "find" && coll == outbox.Relays:
			phase = 3
			c.Advance(10 * time.Millisecond) // the look takes 10ms
		}
	}
	succeeded[x] = func(name, _ string) {
		if phase == 1 && name == "find" { // X has read the order, in s0
			phase = 2
			c.Advance(until(s0+1, time.Second))
			n, err := rs[y].Drain(ctx) // Y delivers it in s0+1
			t.Logf("the other relay delivered %d, err %v", n, err)
			c.Advance(until(s0+2, -5*time.Millisecond))
		}
	}
	_, err = rs[x].Drain(ctx)
	require.NoError(t, err)
	ids := map[string]int{}
	for _, m := range append(ps[x].take(), ps[y].take()...) {
		ids[m.ID]++
	}
	t.Logf("phase %d; deliveries by id: %v", phase, ids)
	for id, n := range ids {
		assert.Equal(t, 1, n, "event %s published once", id)
	}
}
