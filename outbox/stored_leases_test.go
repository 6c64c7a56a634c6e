package outbox_test

import (
	"slices"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestRelayRefusesAStoredLengthNoRelayWrites: a document "length" of
// Leases that holds no length a relay writes (none, zero, negative, a
// string, out of bounds) refuses every Drain with ErrInvalidRelay, which
// says to delete it, and nothing is published.
func TestRelayRefusesAStoredLengthNoRelayWrites(t *testing.T) {
	for name, ns := range map[string]any{"missing": nil, "zero": int64(0), "negative": int64(-1), "a string": "30s",
		"a millisecond": int64(time.Millisecond), "a year": int64(365 * 24 * time.Hour), "an int32": int32(1)} {
		t.Run(name, func(t *testing.T) {
			orders, db := setup(t, nil)
			placeOrders(t, orders, 1)
			doc := bson.D{{Key: "_id", Value: "length"}}
			if ns != nil {
				doc = append(doc, bson.E{Key: "ns", Value: ns})
			}
			_, err := db.Collection(outbox.Leases).InsertOne(ctx, doc)
			require.NoError(t, err)
			p := &recorder{}
			n, err := newRelay(t, db, p).Drain(ctx)
			require.ErrorIs(t, err, outbox.ErrInvalidRelay)
			assert.ErrorContains(t, err, `document "length" of outbox_leases holds no lease length a relay writes`)
			assert.ErrorContains(t, err, "delete that document")
			assert.Zero(t, n)
			assert.Empty(t, p.take())
		})
	}
}

// TestRelayPrunesLeasesNoRelayHolds: pruning deletes the leases of slots
// that ended ten leases ago, and those no relay writes (with no end, or
// one ten leases ahead), and keeps the rest: those of a relay whose clock
// runs a few leases ahead or behind, and the length.
func TestRelayPrunesLeasesNoRelayHolds(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	_, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	r := newRelay(t, db, &recorder{}, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"))
	_, err := r.Drain(ctx) // records the length, and prunes
	require.NoError(t, err)
	c.Advance(10 * lease) // the next Drain prunes again
	stored := map[string]any{
		"old":           c.Now().Add(-11 * lease),
		"behind":        c.Now().Add(-5 * lease),
		"ahead":         c.Now().Add(5 * lease),
		"far ahead":     c.Now().Add(11 * lease),
		"a string":      "soon",
		"many":          bson.A{c.Now().Add(-11 * lease), c.Now()},
		"with no until": nil,
	}
	for name, until := range stored {
		doc := bson.D{{Key: "_id", Value: "6:orders|s:" + name + "@1"}, {Key: "by", Value: "someone"}}
		if until != nil {
			doc = append(doc, bson.E{Key: "until", Value: until})
		}
		_, err := db.Collection(outbox.Leases).InsertOne(ctx, doc)
		require.NoError(t, err)
	}
	_, err = r.Drain(ctx)
	require.NoError(t, err)
	var kept []string
	cur, err := db.Collection(outbox.Leases).Find(ctx, bson.D{})
	require.NoError(t, err)
	var docs []struct {
		ID string `bson:"_id"`
	}
	require.NoError(t, cur.All(ctx, &docs))
	for _, d := range docs {
		kept = append(kept, d.ID)
	}
	slices.Sort(kept)
	want := []string{"6:orders|s:ahead@1", "6:orders|s:behind@1", "length"}
	assert.Equal(t, want, kept)
}
