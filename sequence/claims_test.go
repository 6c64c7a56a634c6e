package sequence_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// claimCount counts the versions of the sequence name: its claims, without
// the fence that ends the claims of the release before versions.
func claimCount(t *testing.T, db *mongo.Database, name string) int64 {
	t.Helper()
	n, err := db.Collection("counters.claims").CountDocuments(context.Background(), versionsOf(name))
	require.NoError(t, err)
	return n
}

func versionsOf(name string) bson.M { return bson.M{"seq": name, "v": bson.M{"$exists": true}} }

// TestClaimsStayBounded races pruning against claiming: allocators with
// their own clients and many goroutines take numbers one claim each, with
// 3 claims kept per sequence, while the claims are counted. No number is
// handed out twice, and the claims stay within 2×3 at rest, plus the
// claims settled while a prune runs (11 at most seen here, of 225), and
// the floors of prunes that overlapped stay as few.
func TestClaimsStayBounded(t *testing.T) {
	const keep, allocs, goroutines, each = 3, 3, 3, 25
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	as := make([]*sequence.Allocator, allocs)
	for i := range as {
		client, err := srv.Client(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { client.Disconnect(context.Background()) })
		as[i] = newAlloc(t, client.Database(db.Name()), sequence.WithStrategy(sequence.Claim),
			sequence.WithBatch(1), sequence.WithClaimRetention(keep))
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					v, err := as[i].Next(ctx, "pruned")
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					all = append(all, v)
					mu.Unlock()
				}
			}()
		}
	}
	var most atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n, err := db.Collection("counters.claims").CountDocuments(ctx, versionsOf("pruned")); err == nil && n > most.Load() {
				most.Store(n)
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-watched
	for _, a := range as {
		require.NoError(t, a.Close(ctx)) // waits for the prunes under way
	}
	requireDistinct(t, all, allocs*goroutines*each)
	left := claimCount(t, db, "pruned")
	t.Logf("%d numbers; claims: at most %d seen, %d left", len(all), most.Load(), left)
	assert.LessOrEqual(t, left, int64(2*keep), "at rest: at most 2×keep claims")
	assert.LessOrEqual(t, most.Load(), int64(2*keep+2*allocs*goroutines),
		"while running: 2×keep plus what is settled while a prune runs (about one claim per writer)")
	floors, err := db.Collection("counters.floors").CountDocuments(ctx, bson.M{})
	require.NoError(t, err)
	// Prunes run concurrently, several per allocator: a lower floor
	// inserted after a higher prune deleted the ones below it stays until
	// the next prune. At rest there is the highest floor plus at most one
	// such leftover per prune that overlapped another (about one per
	// writer), never a number that grows with the claims.
	assert.LessOrEqual(t, floors, int64(1+allocs*goroutines), "the highest floor, and those left by overlapping prunes")
}

// TestStaleHintAfterPruning: an allocator whose newest claim was pruned
// while it slept has a stale idea of the head. Its next claim lands on a
// version that is free again, and Close tries to give numbers back on one;
// both must see the floor and hand out nothing twice.
func TestStaleHintAfterPruning(t *testing.T) {
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	opts := []sequence.Option{sequence.WithStrategy(sequence.Claim), sequence.WithClaimRetention(2), sequence.WithMaxGrowth(1)}
	sleeper := newAlloc(t, db, append(opts, sequence.WithBatch(10))...)
	closer := newAlloc(t, db, append(opts, sequence.WithBatch(10))...)
	busy := newAlloc(t, db, append(opts, sequence.WithBatch(1))...)
	ss, err := sleeper.Sequence("stale")
	require.NoError(t, err)
	sc, err := closer.Sequence("stale")
	require.NoError(t, err)
	sb, err := busy.Sequence("stale")
	require.NoError(t, err)

	all := append(take(t, ss, 1), take(t, sc, 1)...) // version 1: 1..10, version 2: 11..20
	all = append(all, take(t, sb, 30)...)            // versions 3..32: 21..50
	require.NoError(t, busy.Close(ctx))              // and the prunes have run
	assert.LessOrEqual(t, claimCount(t, db, "stale"), int64(4), "versions 1 and 2 are pruned")

	require.NoError(t, closer.Close(ctx)) // version 3 is free again, but was 21
	assert.Equal(t, int64(50), current(t, newAlloc(t, db, opts...), "stale"), "nothing given back")

	all = append(all, take(t, ss, 20)...) // 2..10, then a claim from version 1
	requireDistinct(t, all, len(all))
	assert.Greater(t, all[len(all)-1], int64(50), "the sleeper's new block is past the head")
}

// TestClaimsOfAnEarlierRelease: data written by the release that keyed
// claims by first number (a counter hint behind a chain of claims) is
// continued past the chain's end. The old claims outlive the prunes, since
// a process of that release may still walk them, and a fence ends them.
func TestClaimsOfAnEarlierRelease(t *testing.T) {
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	_, err := db.Collection("counters").InsertOne(ctx, bson.M{"_id": "old", "seq": 100})
	require.NoError(t, err)
	_, err = db.Collection("counters.claims").InsertMany(ctx, []any{
		bson.M{"_id": "old#1", "seq": "old", "lo": 1, "hi": 100},
		bson.M{"_id": "old#101", "seq": "old", "lo": 101, "hi": 200},
	})
	require.NoError(t, err)
	a := newAlloc(t, db, sequence.WithStrategy(sequence.Claim), sequence.WithBatch(1), sequence.WithClaimRetention(2))
	s, err := a.Sequence("old")
	require.NoError(t, err)
	assert.Equal(t, []int64{201, 202, 203, 204}, take(t, s, 4))
	require.NoError(t, a.Close(ctx))
	n, err := db.Collection("counters.claims").CountDocuments(ctx, bson.M{"lo": bson.M{"$exists": true}, "fence": bson.M{"$exists": false}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the old claims stay")
	n, err = db.Collection("counters.claims").CountDocuments(ctx, bson.M{"_id": "old#201", "fence": true})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "a fence ends them")
	assert.LessOrEqual(t, claimCount(t, db, "old"), int64(4), "the versions were pruned")
}
