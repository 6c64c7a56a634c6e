package sequence_test

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// oldWriter is a process of the release before versions, which numbered
// with claims "<name>#<first number>": its claimStore.reserve and claim,
// step for step (git show bda601d^:sequence/store.go), including the
// errors it returns. Its hint is raised after every claim, which is the
// most it ever did (it did so at most once a second).
type oldWriter struct {
	db    *mongo.Database
	name  string
	start int64
	own   int64 // the end of its last claim; below start when it has none
}

// oldClaim and oldCounter are the documents as that release decoded them.
type oldClaim struct {
	ID  string `bson:"_id"`
	Seq string `bson:"seq"`
	Lo  int64  `bson:"lo"`
	Hi  int64  `bson:"hi"`
}

type oldCounter struct {
	Seq int64 `bson:"seq"`
}

func newOldWriter(db *mongo.Database, name string) *oldWriter {
	return &oldWriter{db: db, name: name, start: 1}
}

// reserve claims n numbers and returns the last; the block is
// (last-n, last].
func (w *oldWriter) reserve(n int64) (int64, error) {
	h := w.own
	if w.own < w.start {
		var err error
		if h, err = w.hint(w.own); err != nil {
			return 0, err
		}
	}
	hi, err := w.claim(h, n)
	if err == nil {
		w.own = hi
	}
	return hi, err
}

func (w *oldWriter) hint(own int64) (int64, error) {
	var doc oldCounter
	err := w.db.Collection("counters").FindOne(context.Background(), bson.M{"_id": w.name}).Decode(&doc)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, err
	}
	return max(own, doc.Seq, w.start-1), nil
}

func (w *oldWriter) claim(h, n int64) (int64, error) {
	ctx := context.Background()
	claims := w.db.Collection("counters.claims")
	jumped := false
	for range 10000 {
		lo := h + 1
		if lo > math.MaxInt64-n+1 {
			return 0, sequence.ErrOverflow
		}
		hi := lo + n - 1
		_, err := claims.InsertOne(ctx, oldClaim{ID: w.name + "#" + strconv.FormatInt(lo, 10), Seq: w.name, Lo: lo, Hi: hi})
		if err == nil {
			_, err = w.db.Collection("counters").UpdateOne(ctx, bson.M{"_id": w.name},
				bson.M{"$max": bson.M{"seq": hi}}, options.Update().SetUpsert(true))
			return hi, err
		}
		if !mongo.IsDuplicateKeyError(err) {
			return 0, err
		}
		if !jumped {
			jumped = true
			if hh, err := w.hint(h); err == nil && hh > h {
				h = hh
				continue
			}
		}
		var c oldClaim
		err = claims.FindOne(ctx, bson.M{"_id": w.name + "#" + strconv.FormatInt(lo, 10)}).Decode(&c)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return 0, err
		}
		if err == nil {
			h = c.Hi
		}
	}
	return 0, errors.New("no free place in the claim chain")
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

// TestOldReleaseWritersStopAtTheFence: processes of the release before
// versions that keep running while this release starts (a rolling
// upgrade), or start again after it ran and pruned (a rollback), stop with
// an error at the fence that ends their chain, instead of claiming numbers
// this release hands out: one that was last to claim, one overtaken in the
// middle of the chain, and one starting from the counter.
func TestOldReleaseWritersStopAtTheFence(t *testing.T) {
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	last, overtaken := newOldWriter(db, "up"), newOldWriter(db, "up")
	hi, err := overtaken.reserve(100)
	require.NoError(t, err)
	require.Equal(t, int64(100), hi)
	hi, err = last.reserve(100)
	require.NoError(t, err)
	require.Equal(t, int64(200), hi, "the old chain: 1..100, 101..200")

	a := newAlloc(t, db, sequence.WithStrategy(sequence.Claim), sequence.WithBatch(10), sequence.WithMaxGrowth(1), sequence.WithClaimRetention(2))
	s, err := a.Sequence("up")
	require.NoError(t, err)
	all := take(t, s, 10)
	assert.Equal(t, rangeOf(201, 210), all, "this release continues past the old chain")

	refused := func(w *oldWriter, what string) {
		t.Helper()
		hi, err := w.reserve(100)
		if err == nil {
			all = append(all, rangeOf(hi-99, hi)...)
		}
		assert.Error(t, err, "%s: the old release must stop at the fence, but claimed up to %d", what, hi)
	}
	refused(last, "rolling upgrade, the writer that claimed last")
	refused(overtaken, "rolling upgrade, a writer overtaken mid-chain")

	all = append(all, take(t, s, 300)...) // many versions, and prunes with retention 2
	require.NoError(t, a.Close(ctx))
	refused(newOldWriter(db, "up"), "rollback, a writer starting from the counter")
	refused(overtaken, "rollback, a writer overtaken mid-chain, after the prunes")
	d, dup := firstDup(all)
	assert.False(t, dup, "number %d handed out twice", d)

	claims := db.Collection("counters.claims")
	n, err := claims.CountDocuments(ctx, bson.M{"seq": "up", "lo": bson.M{"$exists": true}, "fence": bson.M{"$exists": false}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the old chain stays: an old writer may still walk it")
	var fence bson.M
	require.NoError(t, claims.FindOne(ctx, bson.M{"_id": "up#201"}).Decode(&fence))
	assert.Equal(t, true, fence["fence"], "the fence ends the old chain")
}

// TestAtomicTakesOverFromClaim: a database numbered with claims, then
// served with the Atomic strategy (moved from FerretDB to MongoDB, or
// Atomic forced on one client), then with Claim again, hands out every
// number once. The Claim strategy never moves the counter document, which
// is all Atomic reads, so Atomic must find the claims and move past them.
func TestAtomicTakesOverFromClaim(t *testing.T) {
	ctx := context.Background()
	db := srv.Database(t) // one connection: Atomic is correct on it
	claimOpts := []sequence.Option{sequence.WithStrategy(sequence.Claim), sequence.WithBatch(10), sequence.WithMaxGrowth(1)}
	atomicOpts := []sequence.Option{sequence.WithStrategy(sequence.Atomic), sequence.WithBatch(10), sequence.WithMaxGrowth(1)}

	c := newAlloc(t, db, claimOpts...)
	all := take(t, mustSeq(t, c, "switch"), 500)
	require.NoError(t, c.Close(ctx))
	a := newAlloc(t, db, atomicOpts...)
	sa := mustSeq(t, a, "switch")
	got := take(t, sa, 10)
	assert.Equal(t, rangeOf(501, 510), got, "Atomic continues past the claims")
	all = append(all, got...)

	// Back to Claim while the Atomic allocator holds 511..519, fetched
	// ahead when it handed out 510.
	c2 := newAlloc(t, db, claimOpts...)
	got = take(t, mustSeq(t, c2, "switch"), 5)
	assert.Equal(t, rangeOf(520, 524), got, "Claim continues past the counter")
	all = append(all, got...)
	all = append(all, take(t, sa, 30)...) // its cached block, then a block past Claim's
	all = append(all, take(t, mustSeq(t, c2, "switch"), 30)...)
	d, dup := firstDup(all)
	assert.False(t, dup, "number %d handed out twice", d)

	// The release before this one (versions, no gate) cannot build on a
	// seal: decoding its end as a number fails, so its writers stop.
	var seal bson.Raw
	require.NoError(t, db.Collection("counters.claims").FindOne(ctx, bson.M{"seq": "switch", "end.atomic": bson.M{"$exists": true}}).Decode(&seal))
	var before struct {
		ID   string `bson:"_id"`
		Seq  string `bson:"seq"`
		V    int64  `bson:"v"`
		End  int64  `bson:"end"`
		Back bool   `bson:"back,omitempty"`
	}
	assert.Error(t, bson.Unmarshal(seal, &before), "a seal must not read as a version to the release before")
}

// TestStrategiesSideBySide: allocators of both strategies on one sequence
// at once (a forced strategy on some clients), blocks of one, so the
// sequence changes hands at almost every block: every number is handed
// out once, and Current is past all of them.
func TestStrategiesSideBySide(t *testing.T) {
	ctx := context.Background()
	db := srv.Database(t) // one connection: Atomic is correct on it
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	for i := range 4 {
		st := []sequence.Strategy{sequence.Claim, sequence.Atomic}[i%2]
		a := newAlloc(t, db, sequence.WithStrategy(st), sequence.WithBatch(int64(1+i)), sequence.WithMaxGrowth(1))
		s := mustSeq(t, a, "mixed")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				v, err := s.Next(ctx)
				if !assert.NoError(t, err, st.String()) {
					return
				}
				mu.Lock()
				all = append(all, v)
				mu.Unlock()
			}
			assert.NoError(t, a.Close(ctx))
		}()
	}
	wg.Wait()
	requireDistinct(t, all, 60)
	for _, st := range []sequence.Strategy{sequence.Claim, sequence.Atomic} {
		cur := current(t, newAlloc(t, db, sequence.WithStrategy(st)), "mixed")
		for _, v := range all {
			require.LessOrEqual(t, v, cur, "%s: Current is past every number handed out", st)
		}
	}
}
