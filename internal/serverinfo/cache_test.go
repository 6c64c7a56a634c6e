package serverinfo

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestCacheLetsClientsGo: the answers cached per client keep no client
// alive. With a map keyed by the client itself, every client ever asked
// about, with its pools, stayed in memory for good.
func TestCacheLetsClientsGo(t *testing.T) {
	ctx := context.Background()
	var kept *mongo.Client
	for i := range 50 {
		client, err := mongo.Connect(ctx, options.Client().ApplyURI("mongodb://127.0.0.1:1/?connect=direct"))
		require.NoError(t, err)
		OneConnection(client)
		atomicCache.store(client, true)
		if i == 0 {
			kept = client
		} else {
			require.NoError(t, client.Disconnect(ctx))
		}
	}
	for range 100 {
		if single.len() == 1 && atomicCache.len() == 1 {
			break
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, 1, single.len(), "OneConnection's entries of dropped clients")
	assert.Equal(t, 1, atomicCache.len(), "AtomicWrites' entries of dropped clients")
	v, ok := atomicCache.load(kept)
	assert.True(t, ok && v, "the entry of a live client stays")
	assert.False(t, OneConnection(kept))
	require.NoError(t, kept.Disconnect(ctx))
}

// BenchmarkCacheLoad: a cached answer costs no allocation.
func BenchmarkCacheLoad(b *testing.B) {
	client, err := mongo.Connect(context.Background(), options.Client().ApplyURI("mongodb://127.0.0.1:1/?connect=direct"))
	require.NoError(b, err)
	defer client.Disconnect(context.Background())
	atomicCache.store(client, true)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := atomicCache.load(client); !ok {
			b.Fatal("not cached")
		}
	}
}
