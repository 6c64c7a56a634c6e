package sequence_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsAccountForEveryNumber: what was reserved is handed out, given
// back, or lost to a move, number for number.
func TestStatsAccountForEveryNumber(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		a := newAlloc(t, dbFor(t, st), sequence.WithStrategy(st), sequence.WithBatch(10), sequence.WithMaxGrowth(1))
		s := mustSeq(t, a, "stats")
		assert.Equal(t, []int64{1, 2, 3}, take(t, s, 3))
		require.NoError(t, s.AdvancePast(ctx, 100)) // 4..10 dropped
		assert.Equal(t, []int64{101, 102}, take(t, s, 2))
		require.NoError(t, a.Close(ctx)) // 103..110 given back
		got := a.Stats()
		assert.Equal(t, sequence.Stats{HandedOut: 5, GivenBack: 8, Reserved: 20, Blocks: 2, RoundTrips: got.RoundTrips}, got)
		assert.Positive(t, got.RoundTrips)
		assert.Equal(t, got, s.Stats(), "one sequence: the allocator's are its")
	})
}

// TestStatsWhileTaking reads the counters while goroutines take numbers
// with Next and NextN: they only grow, and in the end HandedOut is every
// number taken, and nothing is lost by an allocator alone.
func TestStatsWhileTaking(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		a := newAlloc(t, dbFor(t, st), sequence.WithStrategy(st), sequence.WithBatch(16))
		s := mustSeq(t, a, "busy")
		var taken sync.WaitGroup
		var mu sync.Mutex
		n := 0
		for g := range 4 {
			taken.Add(1)
			go func() {
				defer taken.Done()
				dst := make([]int64, 1+g*3)
				for range 40 {
					if !assert.NoError(t, s.NextN(ctx, dst)) {
						return
					}
					mu.Lock()
					n += len(dst)
					mu.Unlock()
				}
			}()
		}
		done := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			var last sequence.Stats
			for {
				cur := a.Stats()
				assert.GreaterOrEqual(t, cur.HandedOut, last.HandedOut)
				assert.GreaterOrEqual(t, cur.Reserved, last.Reserved)
				assert.LessOrEqual(t, cur.HandedOut, cur.Reserved)
				last = cur
				select {
				case <-done:
					return
				default:
				}
			}
		}()
		taken.Wait()
		close(done)
		<-watched
		require.NoError(t, a.Close(ctx))
		got := a.Stats()
		assert.Equal(t, int64(n), got.HandedOut)
		assert.Equal(t, got.Reserved, got.HandedOut+got.GivenBack, "alone, the allocator loses nothing")
	})
}
