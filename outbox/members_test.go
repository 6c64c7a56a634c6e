package outbox_test

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
)

// claimsAndReads watches a relay's client: the lease _ids of each claim
// it sends, and the limit of each read of the orders.
type claimsAndReads struct {
	mu     sync.Mutex
	claims [][]string
	limits []int64
	words  int // the size of the largest reply to a read of Relays
}

func (c *claimsAndReads) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case e.CommandName == "insert" && e.Command.Lookup("insert").StringValue() == outbox.Leases:
			var ids []string
			docs, _ := e.Command.Lookup("documents").Array().Values()
			for _, d := range docs {
				ids = append(ids, d.Document().Lookup("_id").StringValue())
			}
			c.claims = append(c.claims, ids)
		case e.CommandName == "find" && e.Command.Lookup("find").StringValue() == "orders":
			if limit, ok := e.Command.Lookup("limit").AsInt64OK(); ok { // a read of due documents, not a count
				c.limits = append(c.limits, limit)
			}
		}
	}, Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if ns, _ := e.Reply.Lookup("cursor", "ns").StringValueOK(); e.CommandName == "find" && strings.HasSuffix(ns, "."+outbox.Relays) {
			c.words = max(c.words, len(e.Reply))
		}
	}}
}

func (c *claimsAndReads) take() (claims [][]string, limits []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	claims, limits, c.claims, c.limits = c.claims, c.limits, nil, nil
	return claims, limits
}

// sharing returns two relays on clients of their own, watched, that
// serve the orders of db with lease at clock c, and their IDs, sorted.
func sharing(t *testing.T, db *mongo.Database, c *fakeclock.Clock, lease time.Duration, pa, pb outbox.Publisher) (a, b *outbox.Relay, wa, wb *claimsAndReads, members []string) {
	wa, wb = &claimsAndReads{}, &claimsAndReads{}
	opts := []outbox.RelayOption{outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"), outbox.WithCountEvery(time.Hour)}
	a = newRelay(t, monitored(t, db, wa.monitor()), pa, opts...)
	b = newRelay(t, monitored(t, db, wb.monitor()), pb, opts...)
	members = []string{a.ID(), b.ID()}
	slices.Sort(members)
	return a, b, wa, wb, members
}

// TestRelaysClaimTheirShare: two relays serving one collection read as
// much as both would, and each claims only the documents that fall to
// it, so that neither writes a claim the other holds: a works on its
// share while b, at the same time, claims and delivers b's. What a does
// not reach, b takes once its own share is out.
func TestRelaysClaimTheirShare(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	pa := &recorder{fail: func(outbox.Message) error {
		once.Do(func() { close(started); <-release })
		return nil
	}}
	pb := &recorder{}
	a, b, wa, wb, members := sharing(t, db, c, lease, pa, pb)
	for _, r := range []*outbox.Relay{a, b} { // each says it serves the orders
		_, err := r.Drain(ctx)
		require.NoError(t, err)
	}
	c.Advance(lease / 2) // and reads, half a lease later, who else does
	wa.take()
	wb.take()
	placeOrders(t, orders, 40)

	aDone := make(chan error)
	go func() { _, err := a.Drain(ctx); aDone <- err }()
	waitClosed(t, started, "a publishes")
	_, err := b.Drain(ctx)
	require.NoError(t, err)
	close(release)
	require.NoError(t, <-aDone)

	aClaims, aLimits := wa.take()
	bClaims, bLimits := wb.take()
	require.NotEmpty(t, aClaims)
	require.NotEmpty(t, bClaims)
	assert.EqualValues(t, 2*100, aLimits[0], "a reads for both")
	assert.EqualValues(t, 2*100, bLimits[0], "b reads for both")
	for _, id := range aClaims[0] {
		assert.Equal(t, a.ID(), outbox.OwnerOfLease(id, members), "a's first claim holds only its share: %s", id)
	}
	for _, id := range bClaims[0] {
		assert.Equal(t, b.ID(), outbox.OwnerOfLease(id, members), "b's first claim holds only its share: %s", id)
	}
	bMsgs := pb.take()
	assert.NotEmpty(t, bMsgs, "b delivered its share while a worked on its own")
	delivered := map[string]int{}
	for _, ms := range [][]outbox.Message{pa.take(), bMsgs} {
		for _, m := range ms {
			delivered[m.ID]++
		}
	}
	for id, n := range delivered {
		assert.Equal(t, 1, n, "event %s delivered once", id)
	}
	assert.Len(t, delivered, 40, "every event delivered")
}

// TestRelayLearnsOfOthersBetweenItsWords: a relay that read, when it
// last wrote its word, that it serves the collection alone reads again,
// a twentieth of a lease later, which relays serve it, before it reads
// due documents or claims: so relays that start together share from
// their first claims, instead of half a lease later.
func TestRelayLearnsOfOthersBetweenItsWords(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	a, b, wa, _, members := sharing(t, db, c, lease, &recorder{}, &recorder{})
	for _, r := range []*outbox.Relay{a, b} { // a says it serves the orders, alone, then b
		_, err := r.Drain(ctx)
		require.NoError(t, err)
	}
	wa.take()
	placeOrders(t, orders, 40)
	c.Advance(lease / 20)
	n, err := a.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 40, n, "a delivers its share, then b's, which b does not")
	claims, limits := wa.take()
	require.NotEmpty(t, claims)
	assert.EqualValues(t, 2*100, limits[0], "a reads for both")
	for _, id := range claims[0] {
		assert.Equal(t, a.ID(), outbox.OwnerOfLease(id, members), "a's first claim holds only its share: %s", id)
	}
}

// TestRelaySharesWithTheLiving: a relay counts another while it has said
// within two leases that it serves the collection, and then reads for
// both; it delivers the other's documents too when nothing of its own is
// due (the other stopped, or lags). Once the other has been silent for
// two leases, the relay reads for itself alone; a relay whose Run ends
// removes its word at once.
func TestRelaySharesWithTheLiving(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	pa, pb := &recorder{}, &recorder{}
	a, b, _, wb, _ := sharing(t, db, c, lease, pa, pb)
	_, err := a.Drain(ctx) // a says it serves the orders, then says no more
	require.NoError(t, err)

	placeOrders(t, orders, 20)
	n, err := b.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 20, n, "b delivers a's share too: a does not work on it")
	assert.EqualValues(t, 2*100, firstReadLimit(t, wb), "b reads for a and itself")

	c.Advance(2*lease + time.Second)
	_, err = b.Drain(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 100, firstReadLimit(t, wb), "a, silent for two leases, is not counted")

	// A relay whose Run ends removes its word.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- a.Run(runCtx) }()
	require.Eventually(t, func() bool {
		return count(t, db, outbox.Relays, bson.D{{Key: "relay", Value: a.ID()}}) == 1
	}, 10*time.Second, 5*time.Millisecond, "a says it serves the orders")
	cancel()
	require.NoError(t, <-done)
	assert.Zero(t, count(t, db, outbox.Relays, bson.D{{Key: "relay", Value: a.ID()}}), "a's word is gone with its Run")
}

// TestRelayCountsNoWordFromTheFuture: a document of Relays dated
// further ahead than two leases, which no relay's clock writes, is no
// relay's: a relay does not leave a share to it, reads for itself alone,
// and delivers everything. Its pruning deletes such a document, as it
// does one silent for ten leases.
func TestRelayCountsNoWordFromTheFuture(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	ghost, gone := uuid.NewString(), uuid.NewString()
	storeWord(t, db, ghost, c.Now().Add(time.Hour))
	storeWord(t, db, gone, c.Now().Add(-time.Hour))
	_, b, _, wb, _ := sharing(t, db, c, lease, &recorder{}, &recorder{})
	deliversAllReading(t, orders, b, wb, 100) // its first Drain prunes
	assert.Zero(t, count(t, db, outbox.Relays, bson.D{{Key: "relay", Value: ghost}}), "the word from the future is deleted")
	assert.Zero(t, count(t, db, outbox.Relays, bson.D{{Key: "relay", Value: gone}}), "the word silent for ten leases is deleted")
}

// TestRelayWithNoBatchLimitSharesAndDelivers: a relay whose batch is
// math.MaxInt still reads, beside another relay (here a stored word),
// at most 1,000 documents, and delivers everything.
func TestRelayWithNoBatchLimitSharesAndDelivers(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	storeWord(t, db, uuid.NewString(), c.Now())
	w := &claimsAndReads{}
	r := newRelay(t, monitored(t, db, w.monitor()), &recorder{}, outbox.WithLease(lease), outbox.WithRelayClock(c),
		outbox.WithCollections("orders"), outbox.WithCountEvery(time.Hour), outbox.WithBatch(math.MaxInt))
	placeOrders(t, orders, 5)
	n, err := r.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, n, "the relay delivers all")
	assert.EqualValues(t, 1000, firstReadLimit(t, w), "it reads at most 1,000")
}

// TestRelayCountsOnlyRelaysWords: documents of Relays that name no
// relay's ID (a name, a megabyte, a number) count no relay, and keep the
// relay sharing with the one that wrote a word; the words of more than
// 100 relays count none, and the relay then reads for itself alone. It
// delivers everything either way.
func TestRelayCountsOnlyRelaysWords(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	storeWord(t, db, "ghost", c.Now())
	for _, relay := range []any{strings.Repeat("a", 1<<20), 7} {
		_, err := db.Collection(outbox.Relays).InsertOne(ctx, bson.D{{Key: "coll", Value: "orders"}, {Key: "relay", Value: relay}, {Key: "at", Value: c.Now()}})
		require.NoError(t, err)
	}
	storeWord(t, db, uuid.NewString(), c.Now().Add(time.Minute)) // a relay that goes on working
	_, b, _, wb, _ := sharing(t, db, c, lease, &recorder{}, &recorder{})
	deliversAllReading(t, orders, b, wb, 200) // its first Drain prunes

	for range 100 {
		storeWord(t, db, uuid.NewString(), c.Now().Add(time.Minute))
	}
	placeOrders(t, orders, 20)
	c.Advance(lease) // b reads the words again
	n, err := b.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 20, n, "b delivers all beside a hundred words")
	assert.EqualValues(t, 100, firstReadLimit(t, wb), "b reads for itself alone")
}

// TestRelayReadsOnlyRelaysWords: whatever else Relays holds (an _id of
// another type, a megabyte, fields of other types, a word with no date
// or with many) is neither sent back to a relay nor counted, and keeps it
// sharing with the relay that wrote a word; its pruning deletes all of it.
func TestRelayReadsOnlyRelaysWords(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	one := uuid.NewString()
	undated := "6:orders|" + uuid.NewString()
	junk := []bson.D{
		{{Key: "_id", Value: 7}, {Key: "coll", Value: "orders"}, {Key: "relay", Value: one}, {Key: "at", Value: c.Now()}},
		{{Key: "_id", Value: bson.D{{Key: "relay", Value: one}}}, {Key: "coll", Value: "orders"}, {Key: "at", Value: c.Now()}},
		{{Key: "coll", Value: bson.A{"orders"}}, {Key: "relay", Value: bson.A{one}}, {Key: "at", Value: c.Now()}},
		{{Key: "coll", Value: "orders"}, {Key: "relay", Value: primitive.Regex{Pattern: ".*"}}, {Key: "at", Value: c.Now()}},
		{{Key: "_id", Value: "6:orders|" + one + strings.Repeat("a", 1<<20)}, {Key: "coll", Value: "orders"}, {Key: "at", Value: c.Now()}},
		{{Key: "_id", Value: "6:orders|" + one + "\n"}, {Key: "coll", Value: "orders"}, {Key: "at", Value: c.Now()}},
		{{Key: "_id", Value: "6:orderz|" + one}, {Key: "coll", Value: "orders"}, {Key: "at", Value: c.Now()}},
		{{Key: "_id", Value: undated}, {Key: "coll", Value: "orders"}, {Key: "relay", Value: one}, {Key: "at", Value: c.Now().String()}},
		{{Key: "_id", Value: "6:orders|" + uuid.NewString()}, {Key: "at", Value: bson.A{c.Now().Add(-9 * lease), c.Now().Add(9 * lease)}}},
	}
	for _, d := range junk {
		_, err := db.Collection(outbox.Relays).InsertOne(ctx, d)
		require.NoError(t, err)
	}
	storeWord(t, db, uuid.NewString(), c.Now().Add(time.Minute)) // a relay that goes on working
	_, b, _, wb, _ := sharing(t, db, c, lease, &recorder{}, &recorder{})
	deliversAllReading(t, orders, b, wb, 200) // its first Drain prunes
	wb.mu.Lock()
	assert.Less(t, wb.words, 1<<10, "b reads back two small words")
	wb.mu.Unlock()
	assert.Zero(t, count(t, db, outbox.Relays, bson.D{{Key: "_id", Value: undated}}), "the word with no date is deleted")
	assert.EqualValues(t, 3, count(t, db, outbox.Relays, bson.D{}), "pruning leaves only the words of relays: b's, the other's, and one of another collection")
}

// deliversAllReading places 20 orders, and checks that b, watched by
// wb, delivers them in one Drain, reading at most limit at first.
func deliversAllReading(t *testing.T, orders *repo.Repository[*order], b *outbox.Relay, wb *claimsAndReads, limit int64) {
	t.Helper()
	placeOrders(t, orders, 20)
	n, err := b.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 20, n, "b delivers all")
	assert.EqualValues(t, limit, firstReadLimit(t, wb), "b reads for %d relays", limit/100)
}

// storeWord stores in Relays, as if written by relay at at, that it
// serves the orders.
func storeWord(t *testing.T, db *mongo.Database, relay string, at time.Time) {
	t.Helper()
	_, err := db.Collection(outbox.Relays).InsertOne(ctx, bson.D{
		{Key: "_id", Value: "6:orders|" + relay}, {Key: "coll", Value: "orders"}, {Key: "relay", Value: relay},
		{Key: "at", Value: at},
	})
	require.NoError(t, err)
}

// firstReadLimit returns the limit of the first read of due documents
// w saw since it was last taken, and forgets what it saw.
func firstReadLimit(t *testing.T, w *claimsAndReads) int64 {
	t.Helper()
	_, limits := w.take()
	require.NotEmpty(t, limits)
	return limits[0]
}

// count counts the documents of coll in db that match filter.
func count(t testing.TB, db *mongo.Database, coll string, filter bson.D) int64 {
	t.Helper()
	n, err := db.Collection(coll).CountDocuments(ctx, filter)
	require.NoError(t, err)
	return n
}

// TestRelayWarnsOfAClockAhead: a relay that reads the word of another
// whose clock runs more than a third of a lease ahead of its own warns of
// it, naming the other, once a lease at most; one a quarter of a lease
// ahead is within what relays may differ, and draws no warning.
func TestRelayWarnsOfAClockAhead(t *testing.T) {
	lease := 30 * time.Second
	for _, tc := range []struct {
		ahead time.Duration
		warns bool
	}{{lease / 4, false}, {lease / 2, true}} {
		c := fakeclock.New(slotStart(lease))
		_, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
		other := uuid.NewString()
		storeWord(t, db, other, c.Now().Add(tc.ahead))
		var logs bytes.Buffer
		r := newRelay(t, db, &recorder{}, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"),
			outbox.WithCountEvery(time.Hour), outbox.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		for range 3 { // within one lease
			_, err := r.Drain(ctx)
			require.NoError(t, err)
			c.Advance(lease / 4)
		}
		if !tc.warns {
			assert.NotContains(t, logs.String(), "clock runs ahead", "%v ahead", tc.ahead)
			continue
		}
		assert.Equal(t, 1, strings.Count(logs.String(), "clock runs ahead"), "%v ahead: %s", tc.ahead, logs.String())
		assert.Contains(t, logs.String(), "other="+other)
	}
}
