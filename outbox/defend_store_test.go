package outbox_test

import (
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestDefendFindOneAndUpdateUpsertKeepsStoredEvents: a FindOneAndUpdate
// upsert by _id that inserts the document (ReturnDocument Before, the
// default) stores the context's event, yet returns ErrFull ("nothing was
// written": the guard check after ErrNoDocuments finds the new document)
// and leaves the event recorded. The application's retry, or its next
// write with the recorder, stores the event again: it is delivered twice,
// with two Seqs, though no relay died.
func TestDefendFindOneAndUpdateUpsertKeepsStoredEvents(t *testing.T) {
	orders, db := defendSetup(t)
	id := primitive.NewObjectID()
	var rec outbox.Recorder
	rec.Record("order.created", nil)
	evID := rec.Recorded()[0].ID
	_, err := orders.FindOneAndUpdate(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "new"}}}}, options.FindOneAndUpdate().SetUpsert(true))
	t.Logf("FindOneAndUpdate upsert: %v", err)
	stored := queueLen(t, db, id)
	assert.False(t, errors.Is(err, outbox.ErrFull) && stored > 0, "ErrFull says nothing was written, but the document holds %d events", stored)
	if stored > 0 {
		assert.Empty(t, rec.Recorded(), "the write stored the event, so the recorder must be empty")
	}

	// The application retries the call the error made look failed.
	_, err = orders.FindOneAndUpdate(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "new"}}}}, options.FindOneAndUpdate().SetUpsert(true))
	t.Logf("retry: %v", err)
	p := &pub{}
	_, err = relay(t, db, p, outbox.WithCollections("orders")).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, countID(p.all(), evID), "order.created delivered once: %v", p.all())
}

// TestDefendInsertManyPartialKeepsStoredEvents: an ordered InsertMany that
// fails at models[1] has written models[0] with its events, but models[0]'s
// recorder still holds them; the application's next Save of models[0]
// stores them again, and they are delivered twice.
func TestDefendInsertManyPartialKeepsStoredEvents(t *testing.T) {
	orders, db := defendSetup(t)
	taken := &order{Status: "first"}
	require.NoError(t, orders.Insert(ctx, taken))
	a, dup, c := &order{Status: "a"}, &order{Status: "dup"}, &order{Status: "c"}
	dup.ID = taken.ID
	a.Record("a.placed", nil)
	dup.Record("dup.placed", nil)
	c.Record("c.placed", nil)
	evID := a.Recorded()[0].ID
	err := orders.InsertMany(ctx, []*order{a, dup, c})
	require.Error(t, err)
	require.Equal(t, 1, queueLen(t, db, a.ID), "models[0] was written with its event")
	assert.Empty(t, a.Recorded(), "models[0]'s event is stored, so its recorder must be empty")

	a.Status = "a2"
	require.NoError(t, orders.Save(ctx, a))
	p := &pub{}
	_, err = relay(t, db, p, outbox.WithCollections("orders")).Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, countID(p.all(), evID), "a.placed delivered once")
}

// TestDefendDeleteOfGoneDocumentDropsEvents: two copies of one order each
// record an event and Delete; the second Delete matches nothing (the
// document is a tombstone already) and returns nil, so its caller
// believes the event is stored, and it is never delivered.
func TestDefendDeleteOfGoneDocumentDropsEvents(t *testing.T) {
	orders, db := defendSetup(t)
	o := &order{Status: "placed"}
	require.NoError(t, orders.Insert(ctx, o))
	x, err := orders.FindByID(ctx, o.ID)
	require.NoError(t, err)
	y, err := orders.FindByID(ctx, o.ID)
	require.NoError(t, err)
	x.Record("order.cancelled.by.x", nil)
	y.Record("order.cancelled.by.y", nil)
	yID := y.Recorded()[0].ID
	require.NoError(t, orders.Delete(ctx, x))
	err = orders.Delete(ctx, y)
	p := &pub{}
	_, derr := relay(t, db, p, outbox.WithCollections("orders")).Drain(ctx)
	require.NoError(t, derr)
	if err == nil {
		assert.Equal(t, 1, countID(p.all(), yID), "Delete returned nil, so y's event must be delivered (or Delete must fail)")
	}
	assert.ErrorIs(t, err, outbox.ErrNotStored)
	assert.Len(t, y.Recorded(), 1, "y's event stays recorded")
}

// TestDefendSortedUpsertExceedsMaxPending: FindOneAndUpdate with upsert by a
// filter that does not pin _id is bounded by a read (room) of the first
// document the filter matches, without the sort the update uses: the
// update lands on another, full, document and exceeds WithMaxPending.
func TestDefendSortedUpsertExceedsMaxPending(t *testing.T) {
	orders, db := defendSetup(t, outbox.WithMaxPending(2))
	empty := &order{Status: "open", Rank: 1}
	require.NoError(t, orders.Insert(ctx, empty))
	full := &order{Status: "open", Rank: 2}
	full.Record("e1", nil)
	full.Record("e2", nil)
	require.NoError(t, orders.Insert(ctx, full))
	require.Equal(t, 2, queueLen(t, db, full.ID))

	var rec outbox.Recorder
	rec.Record("e3", nil)
	_, err := orders.FindOneAndUpdate(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "status", Value: "open"}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "rank", Value: 10}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetSort(bson.D{{Key: "rank", Value: -1}}))
	if err != nil {
		require.ErrorIs(t, err, outbox.ErrFull)
	}
	assert.LessOrEqual(t, queueLen(t, db, full.ID), 2, "WithMaxPending(2) holds")
}

var _ = errors.New
