package sequence_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/mongo"
)

func take(t *testing.T, s *sequence.Sequence, n int) []int64 {
	t.Helper()
	out := make([]int64, n)
	for i := range out {
		v, err := s.Next(context.Background())
		require.NoError(t, err)
		out[i] = v
	}
	return out
}

// twoSequences returns two allocators over db, as two processes would have,
// and the sequence name of each.
func twoSequences(t *testing.T, db *mongo.Database, name string, opts ...sequence.Option) (a, b *sequence.Allocator, sa, sb *sequence.Sequence) {
	t.Helper()
	a, b = newAlloc(t, db, opts...), newAlloc(t, db, opts...)
	var err error
	sa, err = a.Sequence(name)
	require.NoError(t, err)
	sb, err = b.Sequence(name)
	require.NoError(t, err)
	return a, b, sa, sb
}

func current(t *testing.T, a *sequence.Allocator, name string) int64 {
	t.Helper()
	s, err := a.Sequence(name)
	require.NoError(t, err)
	v, err := s.Current(context.Background())
	require.NoError(t, err)
	return v
}

// TestCloseGivesBackTheTail: the unused rest of the block goes back to the
// counter, the next allocator continues right after the last number used,
// and the closed allocator refuses numbers.
func TestCloseGivesBackTheTail(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		a := newAlloc(t, db, sequence.WithStrategy(st), sequence.WithBatch(10))
		s, err := a.Sequence("tail")
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 2, 3}, take(t, s, 3))
		assert.Equal(t, int64(10), current(t, a, "tail"), "1..10 reserved")
		require.NoError(t, a.Close(ctx))
		require.NoError(t, a.Close(ctx), "Close twice is harmless")

		_, err = s.Next(ctx)
		assert.ErrorIs(t, err, sequence.ErrClosed)
		assert.ErrorContains(t, err, `"tail"`)
		assert.ErrorIs(t, s.NextN(ctx, make([]int64, 3)), sequence.ErrClosed)
		_, err = a.Next(ctx, "never-used")
		assert.ErrorIs(t, err, sequence.ErrClosed, "a sequence first asked for after Close too")

		b := newAlloc(t, db, sequence.WithStrategy(st), sequence.WithBatch(10))
		assert.Equal(t, int64(3), current(t, b, "tail"), "the counter itself is back at 3")
		v, err := b.Next(ctx, "tail")
		require.NoError(t, err)
		assert.Equal(t, int64(4), v)
	})
}

// TestCloseGivesBackThePrefetchedBlock: a block fetched ahead and never
// used is given back with the current block's tail.
func TestCloseGivesBackThePrefetchedBlock(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		a := newAlloc(t, db, sequence.WithStrategy(st), sequence.WithBatch(20), sequence.WithMaxGrowth(1))
		s, err := a.Sequence("ahead")
		require.NoError(t, err)
		take(t, s, 19) // 19 is the trigger: with 2 left, 21..38 is fetched ahead
		require.Eventually(t, func() bool { return current(t, a, "ahead") == 38 }, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, a.Close(ctx))
		b := newAlloc(t, db, sequence.WithStrategy(st))
		assert.Equal(t, int64(19), current(t, b, "ahead"), "20 and the block 21..38 are back")
	})
}

// TestCloseAfterAnotherReserved: an allocator overtaken by another gives
// nothing back; the newest one does.
func TestCloseAfterAnotherReserved(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		opts := []sequence.Option{sequence.WithStrategy(st), sequence.WithBatch(10), sequence.WithMaxGrowth(1)}
		a, b, sa, sb := twoSequences(t, db, "two", opts...)
		all := append(take(t, sa, 1), take(t, sb, 2)...) // a holds 1..10, b 11..20
		require.NoError(t, a.Close(ctx))
		assert.Equal(t, int64(20), current(t, b, "two"), "b reserved after a: a gives nothing back")
		require.NoError(t, b.Close(ctx))
		assert.Equal(t, int64(12), current(t, newAlloc(t, db, opts...), "two"), "b was the newest: 13..20 are back")
		c := newAlloc(t, db, opts...)
		sc, err := c.Sequence("two")
		require.NoError(t, err)
		all = append(all, take(t, sc, 10)...)
		requireDistinct(t, all, 13)
		assert.Equal(t, int64(13), all[3])
	})
}

// TestCloseRacesAllocators closes one allocator while its goroutines take
// numbers and other allocators keep reserving, over many rounds: no number
// is handed out twice, and the numbers taken after everything continue
// without overlap.
func TestCloseRacesAllocators(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		const rounds, allocs, goroutines = 12, 3, 3
		ctx := context.Background()
		db := dbFor(t, st)
		opts := []sequence.Option{sequence.WithStrategy(st), sequence.WithBatch(5)}
		var mu sync.Mutex
		var all []int64
		keep := func(v int64) { mu.Lock(); all = append(all, v); mu.Unlock() }
		for round := range rounds {
			var wg sync.WaitGroup
			as := make([]*sequence.Allocator, allocs)
			for i := range as {
				as[i] = newAlloc(t, db, opts...)
				for range goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 40 {
							v, err := as[i].Next(ctx, "race")
							if err != nil {
								assert.ErrorIs(t, err, sequence.ErrClosed)
								return
							}
							keep(v)
						}
					}()
				}
			}
			time.Sleep(time.Duration(round%5) * time.Millisecond)
			wg.Add(1)
			go func() { defer wg.Done(); assert.NoError(t, as[round%allocs].Close(ctx)) }()
			wg.Wait()
			for _, a := range as {
				assert.NoError(t, a.Close(ctx))
			}
		}
		mu.Lock()
		requireDistinct(t, all, len(all))
		mu.Unlock()
		last := newAlloc(t, db, opts...)
		s, err := last.Sequence("race")
		require.NoError(t, err)
		all = append(all, take(t, s, 50)...)
		requireDistinct(t, all, len(all))
		t.Logf("%d numbers, largest %d", len(all), slices.Max(all))
	})
}

// TestCloseWithAnExpiredContext: a Close whose context has ended gives
// nothing back and says so: its error wraps ErrNotGivenBack and the
// context's error and names the numbers lost, and every later Close
// returns that same error. The numbers lost are a gap: the next allocator
// continues after them, and no number is handed out twice.
func TestCloseWithAnExpiredContext(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		opts := []sequence.Option{sequence.WithStrategy(st), sequence.WithBatch(10), sequence.WithMaxGrowth(1)}
		a := newAlloc(t, db, opts...)
		s, err := a.Sequence("expired")
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 2, 3}, take(t, s, 3))
		done, cancel := context.WithCancel(ctx)
		cancel()
		err = a.Close(done)
		require.ErrorIs(t, err, sequence.ErrNotGivenBack)
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, `sequence "expired": Close: 4..10 not given back`)
		again := a.Close(ctx)
		assert.Equal(t, err, again, "a second Close returns what the first did")
		_, err = s.Next(ctx)
		assert.ErrorIs(t, err, sequence.ErrClosed)

		b := newAlloc(t, db, opts...)
		assert.Equal(t, int64(10), current(t, b, "expired"), "4..10 are lost, not handed out again")
		v, err := b.Next(ctx, "expired")
		require.NoError(t, err)
		assert.Equal(t, int64(11), v)
	})
}

// TestPutBack: the number handed out last goes back and is handed out
// again; one handed out before another does not, nor one outside the
// current block, nor any with batch 1 or after Close.
func TestPutBack(t *testing.T) {
	ctx := context.Background()
	db := dbFor(t, sequence.Claim)
	a := newAlloc(t, db, sequence.WithBatch(10))
	s, err := a.Sequence("back")
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2}, take(t, s, 2))
	assert.False(t, s.PutBack(1), "2 was handed out after 1")
	assert.True(t, s.PutBack(2))
	assert.False(t, s.PutBack(2), "once")
	assert.Equal(t, []int64{2, 3}, take(t, s, 2))
	assert.False(t, s.PutBack(2), "3 was handed out after it")
	assert.False(t, s.PutBack(11), "not in the block")

	one, err := a.Sequence("one", sequence.WithBatch(1))
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, take(t, one, 1))
	assert.False(t, one.PutBack(1), "batch 1 keeps the order across processes")

	require.NoError(t, a.Close(ctx))
	assert.False(t, s.PutBack(3), "after Close")
	b := newAlloc(t, db, sequence.WithBatch(10))
	v, err := b.Next(ctx, "back")
	require.NoError(t, err)
	assert.Equal(t, int64(4), v)
}
