package outbox_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
