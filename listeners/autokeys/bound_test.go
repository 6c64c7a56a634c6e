package autokeys_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestAutoKeysBoundsItsSequences: a dated key takes a sequence per
// period, and AutoKeys keeps only a bounded number of them at hand; a
// period whose sequence was dropped continues where it was, with no
// duplicate.
func TestAutoKeysBoundsItsSequences(t *testing.T) {
	defer autokeys.SetMaxCachedSequences(8)()
	day := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := day
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	orders, keys, db := keyed[*Order](t, autokeys.WithClock(clock))
	first := &Order{}
	require.NoError(t, orders.Insert(ctx, first))
	for i := 1; i < 40; i++ {
		mu.Lock()
		now = day.AddDate(0, 0, i)
		mu.Unlock()
		require.NoError(t, orders.Insert(ctx, &Order{}))
		assert.LessOrEqual(t, autokeys.CachedSequences(keys, reflect.TypeFor[*Order]()), int64(9), "day %d", i)
	}
	mu.Lock()
	now = day
	mu.Unlock()
	again := &Order{}
	require.NoError(t, orders.Insert(ctx, again))
	assert.Equal(t, "ORD26010100001", first.No)
	assert.Equal(t, "ORD26010100002", again.No, "the first day's sequence continues after it was dropped")
	n, err := db.Collection("orders").CountDocuments(ctx, bson.M{"no": again.No})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
}
