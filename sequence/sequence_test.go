package sequence_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/writeconcern"
)

// forEachStrategy runs f once per strategy. Both run on every server: the
// embedded FerretDB's findAndModify is atomic for one connection at a time,
// so dbFor gives Atomic a database on a client with a single connection
// there, and tests with several clients or processes reach it through
// serialURI's proxy, which lets one command through at a time.
func forEachStrategy(t *testing.T, f func(t *testing.T, st sequence.Strategy)) {
	for _, st := range []sequence.Strategy{sequence.Claim, sequence.Atomic} {
		t.Run(st.String(), func(t *testing.T) { f(t, st) })
	}
}

// dbFor returns a fresh database for a test of strategy st: for Atomic, one
// on which findAndModify is atomic (on the embedded server, a client with a
// single connection).
func dbFor(t testing.TB, st sequence.Strategy) *mongo.Database {
	t.Helper()
	if st == sequence.Atomic {
		return srv.Database(t)
	}
	return srv.PooledDatabase(t)
}

// uriFor returns the URI for clients of their own in a test of st: for
// Atomic on a server whose findAndModify is atomic per connection only,
// serialURI's proxy, which lets one command through at a time.
func uriFor(t *testing.T, st sequence.Strategy) string {
	if st == sequence.Atomic {
		return serialURI(t)
	}
	return srv.URI
}

func newAlloc(t testing.TB, db *mongo.Database, opts ...sequence.Option) *sequence.Allocator {
	t.Helper()
	a, err := sequence.New(db, opts...)
	require.NoError(t, err)
	return a
}

func requireDistinct(t *testing.T, nums []int64, want int) {
	t.Helper()
	require.Len(t, nums, want)
	s := slices.Clone(nums)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			t.Fatalf("number %d handed out twice", s[i])
		}
	}
}

func TestDetectsStrategy(t *testing.T) {
	a := newAlloc(t, srv.PooledDatabase(t))
	st, err := a.Strategy(context.Background())
	require.NoError(t, err)
	if srv.Info().FerretDB != "" {
		assert.Equal(t, sequence.Claim, st, "FerretDB's findAndModify is not atomic")
	} else {
		assert.Equal(t, sequence.Atomic, st)
	}
}

func TestNextIsIncreasingFromStart(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		a := newAlloc(t, dbFor(t, st), sequence.WithStrategy(st), sequence.WithMaxGrowth(1))
		s, err := a.Sequence("orders", sequence.WithStart(1000), sequence.WithBatch(7))
		require.NoError(t, err)
		for i := range int64(50) {
			v, err := s.Next(ctx)
			require.NoError(t, err)
			require.Equal(t, 1000+i, v, "one process alone gets consecutive numbers")
		}
		// A first block of 7, then blocks of 6: the prefetch, issued with
		// one number left, takes 7-1 so that at most one block is ever
		// reserved ahead. 50 numbers: 1 + 8 blocks. Atomic: one $inc a
		// block, plus the first use's look for claims and failed $inc.
		// Claim: an insert and the floor check a block, plus the first
		// use's read of the head, the gate closed on the counter and the
		// fence after the old chain (see handover.go).
		want := map[sequence.Strategy]int64{sequence.Atomic: 11, sequence.Claim: 21}[st]
		assert.LessOrEqual(t, a.Stats().RoundTrips, want)
		cur, err := s.Current(ctx)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, cur, int64(1049))
		assert.LessOrEqual(t, cur, int64(1049+7), "at most one block is reserved ahead")
	})
}

func TestConfigErrors(t *testing.T) {
	db := srv.PooledDatabase(t)
	_, err := sequence.New(nil)
	assert.ErrorIs(t, err, sequence.ErrInvalidArgument)
	_, err = sequence.New(db, sequence.WithBatch(0))
	assert.ErrorContains(t, err, "WithBatch(0)")
	a := newAlloc(t, db)
	_, err = a.Sequence("")
	assert.ErrorIs(t, err, sequence.ErrInvalidArgument)
	_, err = a.Sequence("a#b")
	assert.ErrorContains(t, err, "'#'")
	_, err = a.Sequence("x", sequence.WithStart(0))
	assert.ErrorContains(t, err, "Start(0)")
	_, err = a.Sequence("x", sequence.WithBatch(5))
	require.NoError(t, err)
	_, err = a.Sequence("x", sequence.WithBatch(6))
	assert.ErrorIs(t, err, sequence.ErrConflict)
	s, err := a.Sequence("x")
	require.NoError(t, err, "no options: the existing configuration")
	assert.Equal(t, int64(5), s.Batch())

	// One Option type: each call refuses, by name, the options it does not
	// take.
	_, err = a.Sequence("y", sequence.WithTimeout(time.Second))
	assert.ErrorIs(t, err, sequence.ErrInvalidArgument)
	assert.ErrorContains(t, err, "WithTimeout applies to New, not Sequence")
	_, err = sequence.New(db, sequence.WithStart(5))
	assert.ErrorContains(t, err, "WithStart applies to Sequence, not New")
	err = s.SetNext(context.Background(), 10, sequence.WithBatch(3))
	assert.ErrorContains(t, err, "WithBatch applies to New and Sequence, not SetNext")
	_, err = sequence.New(db, sequence.WithForce())
	assert.ErrorContains(t, err, "WithForce applies to SetNext, not New")
}

// TestConcurrentAllocators has several allocators, each with its own client
// as a process would have, and many goroutines each, race on one fresh
// sequence: the first-use race and block contention at once. Atomic's
// clients go through serialURI on FerretDB.
func TestConcurrentAllocators(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		const allocs, goroutines, each = 4, 8, 400
		db := srv.PooledDatabase(t)
		uri := uriFor(t, st)
		var mu sync.Mutex
		var all []int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range allocs {
			client, err := mongo.Connect(context.Background(), options.Client().ApplyURI(uri))
			require.NoError(t, err)
			t.Cleanup(func() { client.Disconnect(context.Background()) })
			a := newAlloc(t, client.Database(db.Name()), sequence.WithStrategy(st), sequence.WithBatch(20))
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					got := make([]int64, 0, each)
					for range each {
						v, err := a.Next(context.Background(), "shared")
						if err != nil {
							t.Error(err)
							return
						}
						got = append(got, v)
					}
					mu.Lock()
					all = append(all, got...)
					mu.Unlock()
				}()
			}
		}
		close(start)
		wg.Wait()
		requireDistinct(t, all, allocs*goroutines*each)
	})
}

// TestFirstUseRace has many allocators take their very first number of a
// new sequence at the same moment, with blocks of one: every racing creator
// but one hits a duplicate key, which must be retried, never returned.
func TestFirstUseRace(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		const n = 24
		db := dbFor(t, st)
		got := make([]int64, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			a := newAlloc(t, db, sequence.WithStrategy(st))
			s, err := a.Sequence("fresh", sequence.WithBatch(1))
			require.NoError(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = s.Next(context.Background())
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		slices.Sort(got)
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i + 1)
		}
		assert.Equal(t, want, got, "batch=1 hands out 1..n with no gap and no repeat")
	})
}

func TestNextNTakesOneReservation(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		a := newAlloc(t, dbFor(t, st), sequence.WithStrategy(st), sequence.WithBatch(50))
		s, err := a.Sequence("bulk")
		require.NoError(t, err)
		// First use: detection and counter creation. One number of a block
		// of 50 starts no prefetch, so nothing runs in the background.
		_, err = s.Next(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), a.Stats().Blocks, "no block fetched ahead")
		before := a.Stats().RoundTrips
		dst := make([]int64, 1000)
		require.NoError(t, s.NextN(ctx, dst))
		assert.Equal(t, int64(2), a.Stats().Blocks, "the shortfall in one block, and none fetched ahead")
		// Claim checks each claim against the floor of pruned claims.
		want := map[sequence.Strategy]int64{sequence.Atomic: 1, sequence.Claim: 2}[st]
		assert.Equal(t, want, a.Stats().RoundTrips-before, "1000 numbers, one reservation")
		assert.True(t, slices.IsSorted(dst))
		requireDistinct(t, dst, 1000)
	})
}

func TestOverflow(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		a := newAlloc(t, dbFor(t, st), sequence.WithStrategy(st))
		s, err := a.Sequence("big", sequence.WithStart(math.MaxInt64-3), sequence.WithBatch(10))
		require.NoError(t, err)
		_, err = s.Next(ctx)
		assert.ErrorIs(t, err, sequence.ErrOverflow)
		cur, err := s.Current(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(math.MaxInt64-4), cur, "nothing was reserved")
	})
}

func TestAdminSetNextAndInitFromData(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		a := newAlloc(t, db, sequence.WithStrategy(st), sequence.WithBatch(10))
		s, err := a.Sequence("admin")
		require.NoError(t, err)
		v, err := s.Next(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), v)

		require.NoError(t, s.SetNext(ctx, 500))
		v, err = s.Next(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(500), v, "cached numbers are dropped")

		err = s.SetNext(ctx, 100)
		assert.ErrorIs(t, err, sequence.ErrBelowData, "below the counter")

		data := db.Collection("items")
		_, err = data.InsertMany(ctx, []any{bson.M{"n": 900}, bson.M{"n": 2000}, bson.M{"n": "text"}})
		require.NoError(t, err)
		err = s.SetNext(ctx, 1500, sequence.WithDataCheck(data, "n"))
		assert.ErrorIs(t, err, sequence.ErrBelowData)
		assert.ErrorContains(t, err, "items.n already holds 2000")

		next, err := s.InitFromData(ctx, data, "n")
		require.NoError(t, err)
		assert.Equal(t, int64(2001), next)
		v, err = s.Next(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(2001), v)

		// A second allocator, as another process, continues past it.
		b := newAlloc(t, db, sequence.WithStrategy(st))
		w, err := b.Next(ctx, "admin")
		require.NoError(t, err)
		assert.Greater(t, w, int64(2001))
	})
}

func TestWaitHonoursContext(t *testing.T) {
	a := newAlloc(t, srv.PooledDatabase(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := a.Next(ctx, "cancelled")
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

func TestWarmNextDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	a := newAlloc(t, srv.PooledDatabase(t), sequence.WithBatch(100000), sequence.WithMaxGrowth(1))
	s, err := a.Sequence("warm")
	require.NoError(t, err)
	_, err = s.Next(ctx)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := s.Next(ctx); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// TestCounterIgnoresTransaction takes a number inside a transaction that is
// then aborted: the counter must not roll back, or the numbers cached from
// it would be handed out again.
func TestCounterIgnoresTransaction(t *testing.T) {
	srv.Require(t, "transactions")
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	a := newAlloc(t, db, sequence.WithBatch(5))
	s, err := a.Sequence("tx")
	require.NoError(t, err)
	sess, err := db.Client().StartSession()
	require.NoError(t, err)
	defer sess.EndSession(ctx)
	var inTx int64
	err = mongo.WithSession(ctx, sess, func(sc mongo.SessionContext) error {
		require.NoError(t, sess.StartTransaction())
		_, err := db.Collection("business").InsertOne(sc, bson.M{"x": 1})
		require.NoError(t, err)
		inTx, err = s.Next(sc)
		require.NoError(t, err)
		return sess.AbortTransaction(sc)
	})
	require.NoError(t, err)
	cur, err := s.Current(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cur, inTx, "the counter kept the block taken inside the aborted transaction")
	n, err := db.Collection("business").CountDocuments(ctx, bson.M{})
	require.NoError(t, err)
	assert.Zero(t, n, "the business write was rolled back")
}

// warmSequence returns a sequence whose block will outlast the benchmark.
func warmSequence(b *testing.B) *sequence.Sequence {
	a := newAlloc(b, srv.PooledDatabase(b), sequence.WithBatch(1<<20), sequence.WithMaxGrowth(1))
	s, err := a.Sequence("bench")
	require.NoError(b, err)
	_, err = s.Next(context.Background())
	require.NoError(b, err)
	return s
}

func BenchmarkNextWarm(b *testing.B) {
	ctx := context.Background()
	s := warmSequence(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNextParallel(b *testing.B) {
	ctx := context.Background()
	s := warmSequence(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Next(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkNextWithRoundTrips takes numbers through block boundaries with
// the default batch: what an insert-heavy process sees.
func BenchmarkNextWithRoundTrips(b *testing.B) {
	ctx := context.Background()
	a := newAlloc(b, srv.PooledDatabase(b))
	s, err := a.Sequence("bench")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(a.Stats().RoundTrips)*10000/float64(b.N), "roundtrips/10k")
}

// TestAdvanceWhileTaking moves the counter past "data" while goroutines
// take numbers: every number stays distinct, and every number taken after
// the move returned is past it.
func TestAdvanceWhileTaking(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		a := newAlloc(t, dbFor(t, st), sequence.WithStrategy(st), sequence.WithBatch(10))
		s, err := a.Sequence("moving")
		require.NoError(t, err)
		var mu sync.Mutex
		var all []int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3000 {
					select {
					case <-stop:
						return
					default:
					}
					v, err := s.Next(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					all = append(all, v)
					mu.Unlock()
				}
			}()
		}
		for i := range 5 {
			past := int64((i + 1) * 10000)
			require.NoError(t, s.AdvancePast(ctx, past))
			v, err := s.Next(ctx)
			require.NoError(t, err)
			assert.Greater(t, v, past)
			mu.Lock()
			all = append(all, v)
			mu.Unlock()
		}
		close(stop)
		wg.Wait()
		requireDistinct(t, all, len(all))
	})
}

// TestCounterWriteConcern watches the commands the allocator sends: every
// counter write asks for majority by default, or what WithWriteConcern says.
func TestCounterWriteConcern(t *testing.T) {
	for name, c := range map[string]struct {
		opts []sequence.Option
		want string
	}{
		"default": {nil, `"w": "majority"`},
		"w1":      {[]sequence.Option{sequence.WithWriteConcern(writeconcern.W1())}, `"w": {"$numberInt":"1"}`},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var writes []string
			mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
				if e.CommandName == "insert" || e.CommandName == "findAndModify" || e.CommandName == "update" {
					wc, _ := e.Command.LookupErr("writeConcern")
					mu.Lock()
					writes = append(writes, e.CommandName+" "+wc.String())
					mu.Unlock()
				}
			}}
			client, err := srv.Client(context.Background(), options.Client().SetMonitor(mon))
			require.NoError(t, err)
			defer client.Disconnect(context.Background())
			a := newAlloc(t, client.Database(srv.PooledDatabase(t).Name()), append(c.opts, sequence.WithBatch(1))...)
			for range 3 {
				_, err := a.Next(context.Background(), "wc")
				require.NoError(t, err)
			}
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, writes)
			for _, w := range writes {
				assert.Contains(t, w, c.want)
			}
		})
	}
}

// TestAdvanceInsideAnotherProcessBlock moves the counter to a number that
// lies inside a block another process holds: the numbers after the move
// must not overlap that block.
func TestAdvanceInsideAnotherProcessBlock(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		_, _, sa, sb := twoSequences(t, db, "shared", sequence.WithStrategy(st), sequence.WithBatch(100), sequence.WithMaxGrowth(1))
		all := take(t, sa, 1)                // a holds 1..100
		all = append(all, take(t, sb, 1)...) // b holds 101..200
		require.NoError(t, sa.AdvancePast(ctx, 150))
		all = append(all, take(t, sa, 120)...)
		all = append(all, take(t, sb, 99)...) // the rest of b's block
		requireDistinct(t, all, len(all))
	})
}
