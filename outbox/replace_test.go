package outbox_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestReplaceByFilterKeepsPending: ReplaceOne and FindOneAndReplace, like
// Save, keep the events an earlier write left in the document, and store
// the replacement's own.
func TestReplaceByFilterKeepsPending(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	first := ids(o.Recorded())
	require.NoError(t, orders.Insert(ctx, o))

	by := &order{Status: "checked"}
	res, err := orders.ReplaceOne(ctx, bson.M{"status": "placed"}, by)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.MatchedCount)
	assert.Equal(t, first, read(t, db, o.ID).Box.Queue, "ReplaceOne keeps the pending event")

	again := &order{Status: "paid"}
	again.Record("order.paid", nil)
	second := ids(again.Recorded())
	_, err = orders.FindOneAndReplace(ctx, bson.M{"status": "checked"}, again)
	require.NoError(t, err)
	s := read(t, db, o.ID)
	assert.Equal(t, append(first, second...), s.Box.Queue, "FindOneAndReplace keeps it and adds its own")
	assert.Equal(t, "paid", s.Status)
	assert.Empty(t, again.Recorded())
}

// TestFindOneAndReplaceUpsertBefore: a FindOneAndReplace upsert that
// inserts the model, with the document before asked for, returns
// ErrNotFound (nothing was before), not an error of the outbox's guard;
// the document is stored with the events, and the recorder is emptied.
func TestFindOneAndReplaceUpsertBefore(t *testing.T) {
	orders, db := setup(t, nil)
	id := primitive.NewObjectID()
	o := &order{Status: "placed"}
	o.SetID(id)
	o.Record("order.placed", nil)
	want := ids(o.Recorded())
	_, err := orders.FindOneAndReplace(ctx, bson.M{"_id": id}, o,
		options.FindOneAndReplace().SetUpsert(true).SetReturnDocument(options.Before))
	require.ErrorIs(t, err, repo.ErrNotFound)
	assert.NotErrorIs(t, err, outbox.ErrFull)
	s := read(t, db, id)
	assert.Equal(t, "placed", s.Status, "the document is stored")
	assert.Equal(t, want, s.Box.Queue, "with its events")
	assert.Empty(t, o.Recorded(), "which are no longer recorded")
}

// TestReplaceUpsertIDFails: when an upsert by ReplaceOne or
// FindOneAndReplace inserted the model but cannot give it the document's
// _id (a string, where the model holds an ObjectID), the error says so,
// and the events, stored with the document, are no longer recorded.
func TestReplaceUpsertIDFails(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	want := ids(o.Recorded())
	_, err := orders.ReplaceOne(ctx, bson.M{"_id": "by-replace"}, o, options.Replace().SetUpsert(true))
	require.ErrorContains(t, err, "the document was written")
	assert.Equal(t, want, read(t, db, "by-replace").Box.Queue, "stored with its events")
	assert.Empty(t, o.Recorded(), "which are no longer recorded")

	o = &order{Status: "placed"}
	o.Record("order.placed", nil)
	want = ids(o.Recorded())
	_, err = orders.FindOneAndReplace(ctx, bson.M{"_id": "by-find"}, o,
		options.FindOneAndReplace().SetUpsert(true).SetReturnDocument(options.After))
	require.ErrorContains(t, err, "the document was written")
	assert.Equal(t, want, read(t, db, "by-find").Box.Queue, "stored with its events")
	assert.Empty(t, o.Recorded(), "which are no longer recorded")
}
