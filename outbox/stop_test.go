package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoppedRelayRecordsWhatItDelivered: a relay whose context ends (its
// Run stopped, as at every deploy) while x.2 is in flight has published
// x.1 already. It still writes x.1's removal, so that the next relay
// publishes x.2 again at most, the one in flight, and never x.1.
func TestStoppedRelayRecordsWhatItDelivered(t *testing.T) {
	for _, atomic := range []bool{true, false} {
		t.Run(fmt.Sprint("atomic=", atomic), func(t *testing.T) {
			const lease = 30 * time.Second
			c := fakeclock.New(slotStart(lease).Add(time.Second))
			orders, db := defendSetup(t, outbox.WithClock(c.Now))
			x := &order{Status: "x"}
			x.Record("x.1", nil)
			x.Record("x.2", nil)
			require.NoError(t, orders.Insert(ctx, x))
			opts := []outbox.RelayOption{outbox.WithCollections("orders"), outbox.WithRelayClock(c), outbox.WithLease(lease), outbox.WithAtomicWrites(atomic)}
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			p1 := &pub{hook: func(m outbox.Message) {
				if m.Type == "x.2" {
					stop() // the relay is stopped while x.2 is in flight
				}
			}}
			_, _ = relay(t, db, p1, opts...).Drain(runCtx)

			c.Advance(2 * lease) // its leases are over; another relay takes over
			p2 := &pub{}
			_, err := relay(t, db, p2, opts...).Drain(ctx)
			require.NoError(t, err)
			all := append(p1.all(), p2.all()...)
			assert.Equal(t, 1, countType(all, "x.1"), "x.1, not in flight when the relay stopped, published once: %v, then %v", typesOf2(p1.all()), typesOf2(p2.all()))
		})
	}
}
