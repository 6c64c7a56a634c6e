package sequence_test

// Attacks on the allocator's uniqueness guarantee: writers paused at the
// worst moments, and chaos. Each asserts that no number is handed out
// twice.

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// gate pauses the first command that match accepts, on a client of its own,
// until release is closed. hit is closed when the command is paused.
type gate struct {
	match   func(e *event.CommandStartedEvent) bool
	armed   atomic.Bool
	hit     chan struct{}
	release chan struct{}
}

func newGate(match func(e *event.CommandStartedEvent) bool) *gate {
	return &gate{match: match, hit: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) arm() { g.armed.Store(true) }

// gatedDB returns db on a new client whose command monitor pauses at g.
func gatedDB(t *testing.T, db *mongo.Database, g *gate) *mongo.Database {
	t.Helper()
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if g.armed.Load() && g.match(e) && g.armed.CompareAndSwap(true, false) {
			close(g.hit)
			<-g.release // the driver sends the command only after this returns
		}
	}}
	client, err := srv.Client(context.Background(), options.Client().SetMonitor(mon))
	require.NoError(t, err)
	t.Cleanup(func() { client.Disconnect(context.Background()) })
	return client.Database(db.Name())
}

func onColl(name, coll string) func(e *event.CommandStartedEvent) bool {
	return func(e *event.CommandStartedEvent) bool {
		if e.CommandName != name {
			return false
		}
		v, err := e.Command.LookupErr(name)
		return err == nil && v.StringValue() == coll
	}
}

func ownClientDB(t *testing.T, db *mongo.Database) *mongo.Database {
	t.Helper()
	client, err := srv.Client(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { client.Disconnect(context.Background()) })
	return client.Database(db.Name())
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestCloseAfterAdvancePast: AdvancePast(v) promises that every number
// handed out from then on is greater than v. When the counter is already
// past v (another process holds a block around v), the holder's Close must
// not give its tail back below v. Every move blocks give-backs (a version
// under Claim, a moves count under Atomic).
func TestCloseAfterAdvancePast(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		opts := []sequence.Option{sequence.WithStrategy(st), sequence.WithBatch(100), sequence.WithMaxGrowth(1)}
		holder, _, sh, sa := twoSequences(t, db, "adv", opts...)
		assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, take(t, sh, 10)) // holds 1..100
		require.NoError(t, sa.AdvancePast(ctx, 50))                              // "1..50 are in the data"
		require.NoError(t, holder.Close(ctx))                                    // gives back 11..100
		fresh := newAlloc(t, db, opts...)
		s, err := fresh.Sequence("adv")
		require.NoError(t, err)
		v, err := s.Next(ctx)
		require.NoError(t, err)
		assert.Greater(t, v, int64(50), "a number handed out after AdvancePast(50) returned")
	})
}

// TestAttackWinnerPausedBeforeFloorRead: a writer wins its insert, then is
// paused before it reads the floor while others settle many versions and
// prune its claim (keep 1). When it resumes, its claim is at or below the
// floor, so it drops it and claims again at the head.
func TestAttackWinnerPausedBeforeFloorRead(t *testing.T) {
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	opts := []sequence.Option{sequence.WithStrategy(sequence.Claim), sequence.WithClaimRetention(1), sequence.WithMaxGrowth(1)}
	g := newGate(onColl("find", "counters.floors"))
	sleeper := newAlloc(t, gatedDB(t, db, g), append(opts, sequence.WithBatch(10))...)
	busy := newAlloc(t, ownClientDB(t, db), append(opts, sequence.WithBatch(1))...)
	ss, _ := sleeper.Sequence("paused")
	sb, _ := busy.Sequence("paused")
	var all []int64
	all = append(all, take(t, sb, 3)...)
	g.arm()
	got := takeInBackground(t, ss, 15)
	wait(t, g.hit, "the sleeper's floor read")
	all = append(all, take(t, sb, 40)...) // many versions, many prunes
	require.NoError(t, busy.Close(ctx))   // waits for the prunes
	close(g.release)
	all = append(all, <-got...)
	require.NoError(t, sleeper.Close(ctx))
	requireDistinct(t, all, len(all))
}

// TestAttackStaleInsertPausedAcrossPrunes: a writer reads the head, is
// paused before its insert while others settle and prune far past it; its
// insert of a pruned version then succeeds and must be dropped.
func TestAttackStaleInsertPausedAcrossPrunes(t *testing.T) {
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	opts := []sequence.Option{sequence.WithStrategy(sequence.Claim), sequence.WithClaimRetention(1), sequence.WithMaxGrowth(1)}
	g := newGate(onColl("insert", "counters.claims"))
	sleeper := newAlloc(t, gatedDB(t, db, g), append(opts, sequence.WithBatch(5))...)
	busy := newAlloc(t, ownClientDB(t, db), append(opts, sequence.WithBatch(1))...)
	ss, _ := sleeper.Sequence("stale2")
	sb, _ := busy.Sequence("stale2")
	var all []int64
	all = append(all, take(t, ss, 2)...) // sleeper holds v1: 1..5
	all = append(all, take(t, sb, 2)...)
	g.arm()
	got := takeInBackground(t, ss, 10)
	wait(t, g.hit, "the sleeper's insert")
	all = append(all, take(t, sb, 30)...)
	require.NoError(t, busy.Close(ctx))
	close(g.release)
	all = append(all, <-got...)
	require.NoError(t, sleeper.Close(ctx))
	all = append(all, take(t, mustSeq(t, newAlloc(t, db, opts...), "stale2"), 10)...)
	requireDistinct(t, all, len(all))
}

func mustSeq(t *testing.T, a *sequence.Allocator, name string) *sequence.Sequence {
	t.Helper()
	s, err := a.Sequence(name)
	require.NoError(t, err)
	return s
}

// TestAttackCloseWhilePrefetchPaused: the allocator's background prefetch
// insert is paused; Close is called (and waits for it), while another
// allocator reserves and closes. Then a give-back paused while others move
// on and prune. Nothing is handed out twice.
func TestAttackCloseWhilePrefetchPaused(t *testing.T) {
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	opts := []sequence.Option{sequence.WithStrategy(sequence.Claim), sequence.WithClaimRetention(1), sequence.WithMaxGrowth(1), sequence.WithBatch(20)}
	g := newGate(onColl("insert", "counters.claims"))
	a := newAlloc(t, gatedDB(t, db, g), opts...)
	b := newAlloc(t, ownClientDB(t, db), opts...)
	sa, sb := mustSeq(t, a, "pf"), mustSeq(t, b, "pf")
	var all []int64
	all = append(all, take(t, sa, 1)...) // v1 1..20
	g.arm()
	all = append(all, take(t, sa, 18)...) // 19 taken: the prefetch starts and pauses
	wait(t, g.hit, "the prefetch")
	closed := make(chan error)
	go func() { closed <- a.Close(ctx) }()
	waitClosing(t, a)
	all = append(all, take(t, sb, 3)...) // b takes v2 first
	close(g.release)
	require.NoError(t, <-closed)
	all = append(all, take(t, sb, 30)...)
	require.NoError(t, b.Close(ctx))
	all = append(all, take(t, mustSeq(t, newAlloc(t, db, opts...), "pf"), 30)...)
	requireDistinct(t, all, len(all))

	// The give-back itself paused, while others settle and prune past it.
	g2 := newGate(func(e *event.CommandStartedEvent) bool {
		if !onColl("insert", "counters.claims")(e) {
			return false
		}
		docs, _ := e.Command.LookupErr("documents")
		vals, _ := docs.Array().Values()
		back, err := vals[0].Document().LookupErr("back")
		return err == nil && back.Boolean()
	})
	c := newAlloc(t, gatedDB(t, db, g2), opts...)
	d := newAlloc(t, ownClientDB(t, db), append(opts[:3:3], sequence.WithBatch(1))...)
	sc, sd := mustSeq(t, c, "pf"), mustSeq(t, d, "pf")
	all = append(all, take(t, sc, 2)...)
	g2.arm()
	go func() { closed <- c.Close(ctx) }()
	wait(t, g2.hit, "the give-back")
	all = append(all, take(t, sd, 1)...) // takes the version the give-back wanted
	require.NoError(t, d.Close(ctx))     // gives it back fully: one version more
	e := newAlloc(t, ownClientDB(t, db), append(opts[:3:3], sequence.WithBatch(1))...)
	all = append(all, take(t, mustSeq(t, e, "pf"), 20)...) // and prunes
	require.NoError(t, e.Close(ctx))
	close(g2.release)
	require.NoError(t, <-closed)
	all = append(all, take(t, mustSeq(t, newAlloc(t, db, opts...), "pf"), 30)...)
	requireDistinct(t, all, len(all))
}

// TestAttackChaos: allocators on clients of their own come and go; each
// takes numbers with Next and NextN of random sizes from several goroutines
// with random batch sizes, closes while its goroutines still run, and an
// admin moves the counter; retention 1 so pruning runs at every version.
func TestAttackChaos(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		var db *mongo.Database
		var dbs []*mongo.Database
		if st == sequence.Atomic {
			db = srv.Database(t)
			dbs = []*mongo.Database{db}
		} else {
			db = srv.PooledDatabase(t)
			for range 4 {
				dbs = append(dbs, ownClientDB(t, db))
			}
		}
		dur := 3 * time.Second
		if s := os.Getenv("MGMEVENTS_CHAOS_SECONDS"); s != "" {
			n, _ := strconv.Atoi(s)
			dur = time.Duration(n) * time.Second
		}
		deadline := time.Now().Add(dur)
		var mu sync.Mutex
		var all []int64
		keepAll := func(vs ...int64) { mu.Lock(); all = append(all, vs...); mu.Unlock() }
		var wg sync.WaitGroup
		var lifetimes atomic.Int64
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for time.Now().Before(deadline) {
					batch := []int64{1, 2, 3, 7, 100}[r.IntN(5)]
					a, err := sequence.New(dbs[r.IntN(len(dbs))], sequence.WithStrategy(st), sequence.WithBatch(batch),
						sequence.WithClaimRetention(int64(1+r.IntN(2))), sequence.WithMaxGrowth(int64(1+r.IntN(16))))
					if !assert.NoError(t, err) {
						return
					}
					lifetimes.Add(1)
					s, _ := a.Sequence("chaos")
					var inner sync.WaitGroup
					for g := range 3 {
						inner.Add(1)
						go func() {
							defer inner.Done()
							r := rand.New(rand.NewPCG(uint64(w*10+g), uint64(time.Now().UnixNano())))
							for range 1 + r.IntN(40) {
								if r.IntN(4) == 0 {
									dst := make([]int64, 1+r.IntN(250))
									if err := s.NextN(ctx, dst); err != nil {
										if !errors.Is(err, sequence.ErrClosed) {
											t.Error(err)
										}
										return
									}
									keepAll(dst...)
								} else {
									v, err := s.Next(ctx)
									if err != nil {
										if !errors.Is(err, sequence.ErrClosed) {
											t.Error(err)
										}
										return
									}
									keepAll(v)
								}
							}
						}()
					}
					time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
					if r.IntN(5) == 0 {
						cur, err := s.Current(ctx)
						if assert.NoError(t, err) {
							assert.NoError(t, s.AdvancePast(ctx, cur+int64(r.IntN(5))))
						}
					}
					if r.IntN(3) == 0 {
						inner.Wait()
					}
					assert.NoError(t, a.Close(ctx))
					inner.Wait()
					assert.NoError(t, a.Close(ctx))
				}
			}()
		}
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, all, "the allocators handed out nothing: the attack did not run")
		all = append(all, take(t, mustSeq(t, newAlloc(t, db, sequence.WithStrategy(st)), "chaos"), 300)...)
		d, dup := firstDup(all)
		require.False(t, dup, "number %d handed out twice (%d numbers, %d allocators)", d, len(all), lifetimes.Load())
	})
}

// takeInBackground takes n numbers from s in a goroutine and sends them
// when done; on an error (reported with t.Error, which is safe there) it
// sends those it got.
func takeInBackground(t *testing.T, s *sequence.Sequence, n int) <-chan []int64 {
	got := make(chan []int64, 1)
	go func() {
		out := make([]int64, 0, n)
		for range n {
			v, err := s.Next(context.Background())
			if err != nil {
				t.Error(err)
				break
			}
			out = append(out, v)
		}
		got <- out
	}()
	return got
}

// waitClosing returns once a's Close has begun: a sequence a has not
// used yet is then refused. Each try uses a sequence of its own, since one
// that got a block hands out its numbers without asking.
func waitClosing(t *testing.T, a *sequence.Allocator) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		_, err := a.Next(context.Background(), "probe"+strconv.Itoa(i))
		if errors.Is(err, sequence.ErrClosed) {
			return
		}
		require.True(t, time.Now().Before(deadline), "Close did not begin: %v", err)
	}
}
