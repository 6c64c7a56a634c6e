package outbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestHungRelayLeavesItsShareToOthers: a relay whose publishes hang
// (its Publisher ignores its context) fails its Drains with
// ErrPublishHung before it claims anything, so that it keeps no document
// from the healthy relay that shares the collection with it: over twenty
// leases, the healthy relay delivers every document.
func TestHungRelayLeavesItsShareToOthers(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	hang := make(chan struct{})
	defer close(hang)
	ph := &recorder{fail: func(outbox.Message) error { <-hang; return nil }}
	pa := &recorder{}
	opts := []outbox.RelayOption{outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"), outbox.WithCountEvery(time.Hour)}
	h := newRelay(t, db, ph, append(opts, outbox.WithMaxHung(1))...)
	a := newRelay(t, db, pa, opts...)
	for range 2 { // each says it serves the orders, then learns of the other
		for _, r := range []*outbox.Relay{h, a} {
			_, err := r.Drain(ctx)
			require.NoError(t, err)
		}
		c.Advance(lease / 20)
	}
	placeOrders(t, orders, 40)
	hDone := make(chan error)
	go func() { _, err := h.Drain(ctx); hDone <- err }()
	stop := c.Drive() // time passes as H waits on its publish, until it abandons it
	hErr := <-hDone
	stop()
	t.Logf("h's first Drain: %v", hErr)
	delivered := map[string]int{}
	var hErrs int
	for range 80 { // twenty leases, H polling as Run does (here every quarter lease)
		c.Advance(lease / 4)
		if _, err := h.Drain(ctx); errors.Is(err, outbox.ErrPublishHung) {
			hErrs++
		}
		_, err := a.Drain(ctx)
		require.NoError(t, err)
		for _, m := range pa.take() {
			delivered[m.ID]++
		}
	}
	left := count(t, db, "orders", bson.D{{Key: "_outbox.q.0", Value: bson.D{{Key: "$exists", Value: true}}}})
	t.Logf("over twenty leases a delivered %d of 40; %d orders never delivered; h failed %d Drains with ErrPublishHung", len(delivered), left, hErrs)
	assert.Zero(t, left, "a healthy relay delivers what a hung one cannot")
}
