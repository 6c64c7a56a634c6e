package sequence_test

// Review attacks on the allocator's uniqueness guarantee (branch
// review-claims). Tests named TestAttackBug* demonstrate a finding and fail
// while it stands; they run only with MGMEVENTS_ATTACK=1 so the package's
// suite stays green. The other TestAttack* tests are attacks that held.

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
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func attackOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("MGMEVENTS_ATTACK") == "" {
		t.Skip("demonstrates a finding; run with MGMEVENTS_ATTACK=1")
	}
}

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

// ---------------------------------------------------------------------------
// Findings

// TestAttackBugCloseUndoesAdvancePast: AdvancePast(v) promises that every
// number handed out from then on is greater than v. When the counter is
// already past v (another process holds a block around v), AdvancePast
// writes nothing; that holder's Close then gives its tail back, lowering
// the counter below v, and the next allocator hands out numbers <= v again
// -- e.g. numbers AutoKeys' heal / InitFromData just declared taken by the
// data. Both strategies.
// TestCloseAfterAdvancePast was a finding of the review: a holder's Close
// gave back numbers below another process's AdvancePast. Every move now
// blocks give-backs (a version under Claim, a moves count under Atomic).
func TestCloseAfterAdvancePast(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		ctx := context.Background()
		db := dbFor(t, st)
		opts := []sequence.Option{sequence.WithStrategy(st), sequence.WithBatch(100), sequence.WithMaxGrowth(1)}
		holder, admin, sh, sa := twoSequences(t, db, "adv", opts...)
		_ = admin
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

// oldReleaseClaim is the claim step of the release before versions
// (git show bda601d^:sequence/store.go, claimStore.claim with upTo 0): a
// claim "<name>#<lo>" for [lo, lo+n-1] at the end of the chain that starts
// at h, the writer's hint. It returns the claim's last number.
func oldReleaseClaim(t *testing.T, db *mongo.Database, name string, h, n int64) int64 {
	t.Helper()
	ctx := context.Background()
	claims := db.Collection("counters.claims")
	jumped := false
	for range 1000 {
		lo := h + 1
		hi := lo + n - 1
		_, err := claims.InsertOne(ctx, bson.M{"_id": name + "#" + strconv.FormatInt(lo, 10), "seq": name, "lo": lo, "hi": hi})
		if err == nil {
			_, _ = db.Collection("counters").UpdateOne(ctx, bson.M{"_id": name},
				bson.M{"$max": bson.M{"seq": hi}}, options.Update().SetUpsert(true))
			return hi
		}
		require.True(t, mongo.IsDuplicateKeyError(err), "%v", err)
		if !jumped {
			jumped = true
			var doc struct{ Seq int64 }
			if err := db.Collection("counters").FindOne(ctx, bson.M{"_id": name}).Decode(&doc); err == nil && doc.Seq > h {
				h = doc.Seq
				continue
			}
		}
		var c struct{ Hi int64 }
		if err := claims.FindOne(ctx, bson.M{"_id": name + "#" + strconv.FormatInt(lo, 10)}).Decode(&c); err == nil {
			h = c.Hi
		}
	}
	t.Fatal("old claim: no place")
	return 0
}

func rangeOf(lo, hi int64) []int64 {
	out := make([]int64, 0, hi-lo+1)
	for v := lo; v <= hi; v++ {
		out = append(out, v)
	}
	return out
}

func firstDup(nums []int64) (int64, bool) {
	seen := make(map[int64]bool, len(nums))
	for _, v := range nums {
		if seen[v] {
			return v, true
		}
		seen[v] = true
	}
	return 0, false
}

// TestAttackBugOldReleaseWriterDuringUpgrade: a process of the previous
// release that keeps running while new-release processes start (a rolling
// upgrade) keeps appending "<name>#<lo>" claims, which never collide with
// "<name>#v<n>" versions: every block it takes after the first new-release
// reservation overlaps the new chain. And after the first prune has
// deleted the old chain, an old-release process (a rollback) starts from
// the counter document, which the new release raises at most once a second
// in the background, and overlaps again.
// TestAttackBugOldReleaseWriterDuringUpgrade demonstrates a documented
// limit (README, "Upgrading"): old-release writers must be stopped before
// the first new-release writer starts, and there is no rollback.
func TestAttackBugOldReleaseWriterDuringUpgrade(t *testing.T) {
	attackOnly(t)
	ctx := context.Background()
	db := srv.Database(t)
	// What the old release left: counter hint 100, chain 1..200.
	_, err := db.Collection("counters").InsertOne(ctx, bson.M{"_id": "up", "seq": 100})
	require.NoError(t, err)
	oldOwn := oldReleaseClaim(t, db, "up", 0, 100)     // 1..100
	oldOwn = oldReleaseClaim(t, db, "up", oldOwn, 100) // 101..200; the old process's own hint is 200
	a := newAlloc(t, db, sequence.WithStrategy(sequence.Claim), sequence.WithBatch(10), sequence.WithMaxGrowth(1), sequence.WithClaimRetention(2))
	s, err := a.Sequence("up")
	require.NoError(t, err)
	var all []int64
	all = append(all, take(t, s, 10)...) // v1: 201..210
	hi := oldReleaseClaim(t, db, "up", oldOwn, 100)
	all = append(all, rangeOf(hi-99, hi)...) // the old process: 201..300
	d, dup := firstDup(all)
	t.Logf("rolling upgrade: new release took 201..210, old release then claimed %d..%d", hi-99, hi)
	assert.False(t, dup, "number %d handed out twice (rolling upgrade)", d)

	// Rollback after pruning, on a sequence of its own: the new release
	// runs a while (the old chain is pruned), closes, and an old-release
	// process starts from the counter hint.
	_, err = db.Collection("counters").InsertOne(ctx, bson.M{"_id": "down", "seq": 100})
	require.NoError(t, err)
	h := oldReleaseClaim(t, db, "down", 0, 100)
	oldReleaseClaim(t, db, "down", h, 100) // chain 1..200
	a2 := newAlloc(t, db, sequence.WithStrategy(sequence.Claim), sequence.WithBatch(10), sequence.WithMaxGrowth(1), sequence.WithClaimRetention(2))
	s2, err := a2.Sequence("down")
	require.NoError(t, err)
	newer := take(t, s2, 300) // 201..500
	require.NoError(t, a2.Close(ctx))
	n, err := db.Collection("counters.claims").CountDocuments(ctx, bson.M{"seq": "down", "lo": bson.M{"$exists": true}})
	require.NoError(t, err)
	var doc struct{ Seq int64 }
	require.NoError(t, db.Collection("counters").FindOne(ctx, bson.M{"_id": "down"}).Decode(&doc))
	hi = oldReleaseClaim(t, db, "down", doc.Seq, 100)
	t.Logf("rollback: old claims left %d, counter hint %d, new release took %d..%d; old release claimed %d..%d",
		n, doc.Seq, newer[0], newer[len(newer)-1], hi-99, hi)
	d, dup = firstDup(append(newer, rangeOf(hi-99, hi)...))
	assert.False(t, dup, "number %d handed out twice (rollback)", d)
}

// TestAttackBugStrategySwitchUsesLaggingHint: the counter document is only
// a hint under Claim (raised at most once a second, in the background), yet
// it is all the Atomic strategy reads. A database that was served with
// Claim (FerretDB) and is then served with Atomic (moved to MongoDB, or
// WithStrategy(Atomic) forced on one client) hands out numbers again.
// TestAttackBugStrategySwitchUsesLaggingHint demonstrates a documented
// limit (README, "Upgrading"): a database numbered with claims must be
// moved past its data before the Atomic strategy serves it.
func TestAttackBugStrategySwitchUsesLaggingHint(t *testing.T) {
	attackOnly(t)
	ctx := context.Background()
	db := srv.AtomicDatabase(t) // one connection: Atomic is correct on it
	c := newAlloc(t, db, sequence.WithStrategy(sequence.Claim), sequence.WithBatch(10), sequence.WithMaxGrowth(1))
	sc, err := c.Sequence("switch")
	require.NoError(t, err)
	all := take(t, sc, 500)
	require.NoError(t, c.Close(ctx))
	var doc struct{ Seq int64 }
	require.NoError(t, db.Collection("counters").FindOne(ctx, bson.M{"_id": "switch"}).Decode(&doc))
	t.Logf("Claim handed out 1..500; counter document says %d", doc.Seq)
	a := newAlloc(t, db, sequence.WithStrategy(sequence.Atomic), sequence.WithBatch(10))
	sa, err := a.Sequence("switch")
	require.NoError(t, err)
	all = append(all, take(t, sa, 10)...)
	d, dup := firstDup(all)
	assert.False(t, dup, "number %d handed out twice after switching to Atomic", d)
}

// ---------------------------------------------------------------------------
// Attacks that held

// TestAttackWinnerPausedBeforeFloorRead: a writer wins its insert, then is
// paused before it reads the floor while others settle many versions and
// prune its claim (keep 1). When it resumes, its claim is at or below the
// floor, so it drops it and claims again at the head.
func TestAttackWinnerPausedBeforeFloorRead(t *testing.T) {
	ctx := context.Background()
	db := srv.Database(t)
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
	db := srv.Database(t)
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
	db := srv.Database(t)
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
	time.Sleep(50 * time.Millisecond)
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
			db = srv.AtomicDatabase(t)
			dbs = []*mongo.Database{db}
		} else {
			db = srv.Database(t)
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
						if err == nil {
							_ = s.AdvancePast(ctx, cur+int64(r.IntN(5)))
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
		keepAll(take(t, mustSeq(t, newAlloc(t, db, sequence.WithStrategy(st)), "chaos"), 300)...)
		mu.Lock()
		defer mu.Unlock()
		if d, dup := firstDup(all); dup {
			t.Fatalf("number %d handed out twice (%d numbers, %d allocators)", d, len(all), lifetimes.Load())
		}
		t.Logf("%d numbers from %d allocators, all distinct", len(all), lifetimes.Load())
	})
}

// takeInBackground takes n numbers from s in a goroutine (errors reported
// with t.Error, which is safe there) and sends them when done.
func takeInBackground(t *testing.T, s *sequence.Sequence, n int) <-chan []int64 {
	got := make(chan []int64, 1)
	go func() {
		out := make([]int64, n)
		for i := range out {
			v, err := s.Next(context.Background())
			if err != nil {
				t.Error(err)
			}
			out[i] = v
		}
		got <- out
	}()
	return got
}
