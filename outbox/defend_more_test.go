package outbox_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// TestDefendConcurrentWritersAndRelayLoseEvents (FerretDB): ONE writer,
// updating its document one write at a time, and a relay, each on an
// ordinary pool of the embedded server, whose updates read the document
// and write it back whole, so that one connection's update erases
// another's: the relay's removal and the writer's $push interleave, and
// stored events vanish (1 to 6 of 60). No removal the relay could send
// avoids that, so the outbox refuses such a client, for writes and for
// the relay, before anything is written; the same race on one connection
// (TestHeldWriterAndRelayOnOneConnection) loses nothing. On MongoDB the
// race runs on the ordinary pool.
func TestDefendConcurrentWritersAndRelayLoseEvents(t *testing.T) {
	db := srv.PooledDatabase(t)
	if srv.Info().AtomicFindMod {
		writerAndRelay(t, db)
		return
	}
	orders, _ := defendSetupOn(t, db)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	err := orders.Insert(ctx, o)
	require.ErrorIs(t, err, outbox.ErrUnsupported)
	assert.ErrorContains(t, err, "maxPoolSize=1")
	n, err := db.Collection("orders").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing written")
	_, err = relay(t, db, &pub{}, outbox.WithCollections("orders")).Drain(ctx)
	assert.ErrorIs(t, err, outbox.ErrUnsupported, "the relay refuses the pool too")
}

// TestHeldWriterAndRelayOnOneConnection: the same race through
// Database (one connection, so the server applies one update at a
// time) loses nothing: the loss above is the server's non-atomic update.
func TestHeldWriterAndRelayOnOneConnection(t *testing.T) {
	writerAndRelay(t, srv.Database(t))
}

func writerAndRelay(t *testing.T, db *mongo.Database) {
	orders, _ := defendSetupOn(t, db)
	o := &order{Status: "placed"}
	require.NoError(t, orders.Insert(ctx, o))
	p := &pub{}
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithPollInterval(time.Millisecond))
	rctx, cancel := contextWithCancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	const writers, each = 1, 60
	var want sync.Map
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var rec outbox.Recorder
				rec.Record("tick", bson.D{{Key: "w", Value: w}, {Key: "i", Value: i}})
				id := rec.Recorded()[0].ID
				_, err := orders.UpdateOne(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "_id", Value: o.ID}},
					bson.D{{Key: "$inc", Value: bson.D{{Key: "rank", Value: 1}}}})
				if assert.NoError(t, err) {
					want.Store(id, true)
				}
			}
		}()
	}
	wg.Wait()
	// The relay has removed what it published once the queue is empty.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && queueLen(t, db, o.ID) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	got := map[string]bool{}
	for _, m := range p.all() {
		got[m.ID] = true
	}
	lost := 0
	want.Range(func(k, _ any) bool {
		if !got[k.(string)] {
			lost++
		}
		return true
	})
	t.Logf("stored %d events, delivered %d distinct, %d still queued", writers*each, len(got), queueLen(t, db, o.ID))
	assert.Zero(t, lost, "every stored event is delivered")
}

// TestHeldStaleSaveBringsNothingBack: a model loaded before a delivery,
// saved afterwards with a new event, keeps the new event and brings back
// none of the delivered ones.
func TestHeldStaleSaveBringsNothingBack(t *testing.T) {
	orders, db := defendSetup(t)
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	require.NoError(t, orders.Insert(ctx, o))
	stale, err := orders.FindByID(ctx, o.ID)
	require.NoError(t, err)
	p := &pub{}
	r := relay(t, db, p, outbox.WithCollections("orders"))
	_, err = r.Drain(ctx)
	require.NoError(t, err)
	stale.Status = "stale"
	stale.Record("e2", nil)
	require.NoError(t, orders.Save(ctx, stale))
	_, err = r.Drain(ctx)
	require.NoError(t, err)
	var types []string
	for _, m := range p.all() {
		types = append(types, m.Type)
	}
	assert.Equal(t, []string{"e1", "e2"}, types)
}

// TestHeldExpiredRelayCannotRemoveOthersWork: relay A is stuck publishing
// e1 past its lease, and gives up on it; a writer adds e2 and e3 while B
// holds the document and A's publish still runs; when it returns, A takes
// nothing away, and B delivers e1, e2 and e3 in order.
func TestHeldExpiredRelayCannotRemoveOthersWork(t *testing.T) {
	c := fakeclock.New(time.Now())
	orders, db := defendSetup(t, outbox.WithClock(c.Now))
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	require.NoError(t, orders.Insert(ctx, o))
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	pa := &pub{hook: func(outbox.Message) { entered <- struct{}{}; <-gate }}
	pb := &pub{}
	lease := 3 * time.Second
	a := relay(t, db, pa, outbox.WithCollections("orders"), outbox.WithLease(lease), outbox.WithRelayClock(c))
	b := relay(t, db, pb, outbox.WithCollections("orders"), outbox.WithLease(lease), outbox.WithRelayClock(c))
	adone := make(chan struct{})
	go func() { defer close(adone); _, _ = a.Drain(ctx) }()
	waitClosed(t, entered, "A publishes e1")
	c.Advance(7 * time.Second) // A's lease is over; A gives up on Publish(e1), which is stuck
	waitClosed(t, adone, "A's Drain returns")
	o.Record("e2", nil)
	require.NoError(t, orders.Save(ctx, o))
	_, err := b.Drain(ctx)
	require.NoError(t, err)
	o.Record("e3", nil)
	require.NoError(t, orders.Save(ctx, o))
	close(gate)
	require.Eventually(t, func() bool { return a.Stats().Hung == 0 }, time.Minute, time.Millisecond, "A's publish returns")
	c.Advance(2 * time.Second) // the backoff of A's failed attempt is over
	_, err = b.Drain(ctx)
	require.NoError(t, err)
	var types []string
	for _, m := range pb.all() {
		types = append(types, m.Type)
	}
	assert.Equal(t, []string{"e1", "e2", "e3"}, types)
	assert.Zero(t, queueLen(t, db, o.ID))
}

// TestHeldPoisonMessageDoesNotBlockOthers: a message that always fails
// goes to dead letters after MaxAttempts; its document's next event
// follows in order, and another document flows meanwhile.
func TestHeldPoisonMessageDoesNotBlockOthers(t *testing.T) {
	orders, db := defendSetup(t)
	x := &order{Status: "x"}
	x.Record("poison", nil)
	x.Record("x.after", nil)
	require.NoError(t, orders.Insert(ctx, x))
	y := &order{Status: "y"}
	y.Record("y.1", nil)
	require.NoError(t, orders.Insert(ctx, y))
	p := &pub{fail: func(m outbox.Message) error {
		if m.Type == "poison" {
			return assert.AnError
		}
		return nil
	}}
	r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithMaxAttempts(2),
		outbox.WithBackoff(func(int) time.Duration { return 0 }))
	for range 3 {
		_, err := r.Drain(ctx)
		require.NoError(t, err)
	}
	var types []string
	for _, m := range p.all() {
		types = append(types, m.Type)
	}
	assert.ElementsMatch(t, []string{"y.1", "x.after"}, types)
	n, err := db.Collection(outbox.DeadLetters).CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
}

// TestHeldTombstoneHiddenFromEveryRepositoryRead: once deleted, the
// document is gone for FindByID, Count, Distinct, Aggregate, UpdateOne and
// FindOneAndUpdate, and an upsert by its _id cannot bring it back.
func TestHeldTombstoneHiddenFromEveryRepositoryRead(t *testing.T) {
	orders, db := defendSetup(t)
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	require.NoError(t, orders.Insert(ctx, o))
	require.NoError(t, orders.Delete(ctx, o))
	id := bson.D{{Key: "_id", Value: o.ID}}
	_, err := orders.FindByID(ctx, o.ID)
	assert.Error(t, err)
	n, err := orders.Count(ctx, id)
	require.NoError(t, err)
	assert.Zero(t, n)
	d, err := orders.Distinct(ctx, "status", bson.D{})
	require.NoError(t, err)
	assert.Empty(t, d)
	var agg []bson.M
	require.NoError(t, orders.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}, &agg))
	assert.Empty(t, agg)
	res, err := orders.UpdateOne(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "x"}}}})
	require.NoError(t, err)
	assert.Zero(t, res.MatchedCount)
	_, err = orders.FindOneAndUpdate(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "x"}}}})
	assert.Error(t, err)
	var rec outbox.Recorder
	rec.Record("resurrect", nil)
	_, err = orders.UpdateOne(outbox.WithRecorder(ctx, &rec), id, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "x"}}}}, upsert())
	assert.Error(t, err, "an upsert by the _id of a tombstone fails")
	assert.Equal(t, 1, queueLen(t, db, o.ID))
	_ = primitive.NilObjectID
}

// TestDefendSeqRestartsAfterReinsert: once a relay removes a deleted
// document, an Insert with the same _id would start its Seq at 1 again,
// so the subject's stream would carry Seq 1, 2, 1, and a consumer that
// orders or de-duplicates by subject and Seq would drop the new
// document's events. The relay records the last Seq in outbox.Seqs when
// it removes the document, and the next document with the _id continues
// it, through more deletes and inserts, with either write strategy.
func TestDefendSeqRestartsAfterReinsert(t *testing.T) {
	strategies(t, func(t *testing.T) {
		orders, db := defendSetup(t)
		p := &pub{}
		r := relay(t, db, p, outbox.WithCollections("orders"), outbox.WithAtomicWrites(atomicRun))
		drain := func() {
			t.Helper()
			_, err := r.Drain(ctx)
			require.NoError(t, err)
		}
		o := &order{Status: "placed"}
		o.Record("order.placed", nil)
		require.NoError(t, orders.Insert(ctx, o))
		o.Record("order.cancelled", nil)
		require.NoError(t, orders.Delete(ctx, o))
		drain()
		require.Nil(t, box(t, db, o.ID), "the tombstone is removed")

		again := &order{Status: "placed again"}
		again.ID = o.ID
		again.Record("order.placed", nil)
		require.NoError(t, orders.Insert(ctx, again))
		drain()
		again.Record("order.changed", nil)
		require.NoError(t, orders.Save(ctx, again))
		drain()
		require.NoError(t, orders.Delete(ctx, again)) // no event: the Seq stays
		drain()
		require.Nil(t, box(t, db, o.ID), "the tombstone is removed")

		third := &order{Status: "placed a third time"}
		third.ID = o.ID
		third.Record("order.placed", nil)
		third.Record("order.changed", nil)
		require.NoError(t, orders.Insert(ctx, third))
		drain()
		var seqs []int64
		for _, m := range p.all() {
			seqs = append(seqs, m.Seq)
		}
		assert.Equal(t, []int64{1, 2, 3, 4, 5, 6}, seqs, "Seq of subject %s keeps growing", o.ID.Hex())
	})
}
