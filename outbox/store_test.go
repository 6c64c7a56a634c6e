package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestInsertStoresTheEvents: Insert and InsertMany put the recorded events
// in the new document, in order, and empty the recorders.
func TestInsertStoresTheEvents(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("order.placed", placed{N: 1})
	o.Record("order.paid", bson.D{{Key: "amount", Value: 5}})
	want := ids(o.Recorded())
	require.NoError(t, orders.Insert(ctx, o))
	assert.Empty(t, o.Recorded(), "the recorder is empty after the write")
	s := read(t, db, o.ID)
	assert.Equal(t, want, s.Box.Queue)
	assert.EqualValues(t, 2, s.Box.Count)
	assert.Len(t, s.Box.Events, 2)
	assert.NotNil(t, s.Box.Due)
	body := s.Box.Events[want[0]]
	assert.Equal(t, "order.placed", body["t"])
	var data struct {
		N int `bson:"n"`
	}
	raw, err := bson.Marshal(body["d"])
	require.NoError(t, err)
	require.NoError(t, bson.Unmarshal(raw, &data))
	assert.Equal(t, 1, data.N)

	a, b := &order{}, &order{}
	a.Record("a.1", nil)
	b.Record("b.1", nil)
	b.Record("b.2", nil)
	wa, wb := ids(a.Recorded()), ids(b.Recorded())
	require.NoError(t, orders.InsertMany(ctx, []*order{a, b, {Status: "none"}}))
	assert.Equal(t, wa, read(t, db, a.ID).Box.Queue)
	assert.Equal(t, wb, read(t, db, b.ID).Box.Queue)
	assert.Empty(t, a.Recorded())
	assert.Empty(t, b.Recorded())

	sources, err := db.Collection(outbox.Sources).CountDocuments(ctx, bson.D{{Key: "_id", Value: "orders"}})
	require.NoError(t, err)
	assert.EqualValues(t, 1, sources, "the collection is named for relays")
}

// TestFailedWriteKeepsTheEvents: a vetoed write and a write the server
// refuses store nothing and leave the events recorded.
func TestFailedWriteKeepsTheEvents(t *testing.T) {
	veto := errors.New("vetoed")
	orders, db := setup(t, nil, events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Type == events.BeforeSave && e.Model.(*order).Status == "veto" {
			return veto
		}
		return nil
	}))
	o := &order{Status: "veto"}
	o.Record("order.placed", nil)
	require.ErrorIs(t, orders.Insert(ctx, o), veto)
	assert.Len(t, o.Recorded(), 1)
	n, err := db.Collection("orders").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n)

	o.Status = "placed"
	require.NoError(t, orders.Insert(ctx, o))
	dup := &order{Status: "dup"}
	dup.ID = o.ID
	dup.Record("order.placed", nil)
	require.Error(t, orders.Insert(ctx, dup), "duplicate _id")
	assert.Len(t, dup.Recorded(), 1, "still recorded")
	assert.Len(t, read(t, db, o.ID).Box.Queue, 1, "the stored document is untouched")
}

// deliver removes all the events of a document as a relay does once it
// has published them.
func deliver(t *testing.T, db *mongo.Database, id any, evs ...string) {
	t.Helper()
	unset := bson.D{}
	for _, e := range evs {
		unset = append(unset, bson.E{Key: outbox.Field + ".e." + e, Value: ""})
	}
	_, err := db.Collection("orders").UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{
		{Key: "$pullAll", Value: bson.D{{Key: outbox.Field + ".q", Value: evs}}},
		{Key: "$unset", Value: unset},
		{Key: "$set", Value: bson.D{{Key: outbox.Field + ".b", Value: 0}}},
	})
	require.NoError(t, err)
}

// TestSaveKeepsPendingAndNeverBringsBackDelivered: a Save is sent as an
// update that adds its events to those an earlier write left, and does not
// write back an event a relay removed meanwhile, though the model was
// loaded before.
func TestSaveKeepsPendingAndNeverBringsBackDelivered(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed", Note: "gift"}
	o.Record("order.placed", nil)
	first := ids(o.Recorded())
	require.NoError(t, orders.Insert(ctx, o))

	loaded, err := orders.FindByID(ctx, o.ID)
	require.NoError(t, err)
	loaded.Status = "checked"
	require.NoError(t, orders.Save(ctx, loaded))
	assert.Equal(t, first, read(t, db, o.ID).Box.Queue, "a Save without events keeps the pending one")

	deliver(t, db, o.ID, first...)
	loaded.Status, loaded.Note = "paid", ""
	loaded.Record("order.paid", nil)
	second := ids(loaded.Recorded())
	require.NoError(t, orders.Save(ctx, loaded))
	s := read(t, db, o.ID)
	assert.Equal(t, second, s.Box.Queue, "the delivered event does not come back")
	assert.NotContains(t, s.Box.Events, first[0])
	assert.EqualValues(t, 2, s.Box.Count, "the Seq count comes from the stored document")
	assert.Equal(t, "paid", s.Status)
	assert.Empty(t, s.Note, "a field the model left out is removed, as by a replace")
	assert.Empty(t, loaded.Recorded())
}

// TestUpdatesStoreTheEvents: Update stores the model's events; UpdateOne,
// FindOneAndUpdate and upserts store the context's.
func TestUpdatesStoreTheEvents(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	require.NoError(t, orders.Insert(ctx, o))
	o.Status = "paid"
	o.Record("order.paid", nil)
	want := ids(o.Recorded())
	require.NoError(t, orders.Update(ctx, o))
	assert.Empty(t, o.Recorded())

	var rec outbox.Recorder
	rec.Record("order.shipped", nil)
	want = append(want, ids(rec.Recorded())...)
	byID := bson.D{{Key: "_id", Value: o.ID}}
	_, err := orders.UpdateOne(outbox.WithRecorder(ctx, &rec), byID, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "shipped"}}}})
	require.NoError(t, err)
	assert.Empty(t, rec.Recorded())
	rec.Record("order.delivered", nil)
	want = append(want, ids(rec.Recorded())...)
	_, err = orders.FindOneAndUpdate(outbox.WithRecorder(ctx, &rec), byID, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "delivered"}}}})
	require.NoError(t, err)
	assert.Empty(t, rec.Recorded())
	s := read(t, db, o.ID)
	assert.Equal(t, want, s.Box.Queue)
	assert.EqualValues(t, 3, s.Box.Count)
	assert.Equal(t, "delivered", s.Status)

	// No document matched: nothing stored, the events stay recorded.
	rec.Record("order.lost", nil)
	res, err := orders.UpdateOne(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "status", Value: "nowhere"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "note", Value: "x"}}}})
	require.NoError(t, err)
	assert.Zero(t, res.MatchedCount)
	assert.Len(t, rec.Recorded(), 1)

	// Upserts, by _id and by another field.
	up := options.Update().SetUpsert(true)
	_, err = orders.UpdateOne(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "status", Value: "new"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "note", Value: "x"}}}}, up)
	require.NoError(t, err)
	assert.Empty(t, rec.Recorded())
	upserted, err := orders.FindOne(ctx, bson.D{{Key: "status", Value: "new"}})
	require.NoError(t, err)
	assert.Len(t, read(t, db, upserted.ID).Box.Queue, 1)
	rec.Record("order.again", nil)
	_, err = orders.UpdateOne(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "_id", Value: upserted.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "note", Value: "y"}}}}, up)
	require.NoError(t, err)
	assert.Len(t, read(t, db, upserted.ID).Box.Queue, 2)
}

// TestWhatCannotStoreEventsIsRefused: writes of many documents with
// events, an update of the reserved field, a model that writes it and a
// model without a Recorder are refused, and nothing is written.
func TestWhatCannotStoreEventsIsRefused(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	require.NoError(t, orders.Insert(ctx, o))
	var rec outbox.Recorder
	rec.Record("x", nil)
	rctx := outbox.WithRecorder(ctx, &rec)
	_, err := orders.UpdateMany(rctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "all"}}}})
	assert.ErrorIs(t, err, outbox.ErrUnsupported, "UpdateMany")
	_, err = orders.DeleteMany(rctx, bson.D{})
	assert.ErrorIs(t, err, outbox.ErrUnsupported, "DeleteMany")
	_, err = orders.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$unset", Value: bson.D{{Key: outbox.Field, Value: ""}}}})
	assert.ErrorIs(t, err, outbox.ErrUnsupported, "an update of the reserved field")
	assert.Len(t, rec.Recorded(), 1)
	s := read(t, db, o.ID)
	assert.Equal(t, "placed", s.Status)
	assert.Len(t, s.Box.Queue, 1)

	bad := &order{}
	bad.Record("order.bad", "a string is not a document")
	err = orders.Insert(ctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `event "order.bad"`)
	assert.Len(t, bad.Recorded(), 1)
}

// TestErrFull: a write that would leave more undelivered events or bytes
// in a document than allowed gets ErrFull, writes nothing and keeps the
// events recorded, whichever operation it is.
func TestErrFull(t *testing.T) {
	orders, db := setup(t, []outbox.Option{outbox.WithMaxPending(3), outbox.WithMaxPendingBytes(400)})
	o := &order{Status: "placed"}
	for range 4 {
		o.Record("e", nil)
	}
	require.ErrorIs(t, orders.Insert(ctx, o), outbox.ErrFull)
	n, err := db.Collection("orders").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n)

	o.Recorder = outbox.Recorder{}
	o.Record("e", nil)
	o.Record("e", nil)
	require.NoError(t, orders.Insert(ctx, o))
	o.Status = "paid"
	o.Record("e", nil)
	o.Record("e", nil)
	require.ErrorIs(t, orders.Save(ctx, o), outbox.ErrFull, "Save: 2 stored + 2 > 3")
	require.ErrorIs(t, orders.Update(ctx, o), outbox.ErrFull, "Update")
	require.ErrorIs(t, orders.Delete(ctx, o), outbox.ErrFull, "Delete")
	assert.Len(t, o.Recorded(), 2)
	var rec outbox.Recorder
	rec.Record("e", nil)
	rec.Record("e", nil)
	byID := bson.D{{Key: "_id", Value: o.ID}}
	_, err = orders.UpdateOne(outbox.WithRecorder(ctx, &rec), byID, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "x"}}}})
	require.ErrorIs(t, err, outbox.ErrFull, "UpdateOne")
	_, err = orders.UpdateOne(outbox.WithRecorder(ctx, &rec), bson.D{{Key: "status", Value: "placed"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "note", Value: "x"}}}}, options.Update().SetUpsert(true))
	require.ErrorIs(t, err, outbox.ErrFull, "an upsert by another field")
	s := read(t, db, o.ID)
	assert.Equal(t, "placed", s.Status, "nothing written")
	assert.Empty(t, s.Note)
	assert.Len(t, s.Box.Queue, 2)
	assert.False(t, s.Box.Gone)

	// One more event fits; then the bytes limit holds too.
	o.Recorder = outbox.Recorder{}
	o.Record("e", nil)
	require.NoError(t, orders.Save(ctx, o))
	deliver(t, db, o.ID, read(t, db, o.ID).Box.Queue...)
	o.Record("big", bson.D{{Key: "pad", Value: string(make([]byte, 300))}})
	require.NoError(t, orders.Save(ctx, o))
	o.Record("big", bson.D{{Key: "pad", Value: string(make([]byte, 300))}})
	require.ErrorIs(t, orders.Save(ctx, o), outbox.ErrFull, "bytes")
}

// TestDeleteKeepsTheEvents: a deleted document with events pending or
// recorded at the delete is gone for every read at once, and kept, with
// its events in order, for a relay.
func TestDeleteKeepsTheEvents(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	want := ids(o.Recorded())
	require.NoError(t, orders.Insert(ctx, o))
	other := &order{Status: "other"}
	require.NoError(t, orders.Insert(ctx, other))
	o.Record("order.cancelled", nil)
	want = append(want, ids(o.Recorded())...)
	require.NoError(t, orders.Delete(ctx, o))
	assert.Empty(t, o.Recorded())

	s := read(t, db, o.ID)
	require.True(t, s.Has, "kept for the relay")
	assert.True(t, s.Box.Gone)
	assert.Equal(t, want, s.Box.Queue)

	_, err := orders.FindByID(ctx, o.ID)
	assert.ErrorIs(t, err, repo.ErrNotFound)
	all, err := orders.Find(ctx, bson.D{})
	require.NoError(t, err)
	assert.Len(t, all, 1)
	n, err := orders.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	var agg []bson.M
	require.NoError(t, orders.Aggregate(ctx, []bson.D{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}}, &agg))
	assert.EqualValues(t, 1, agg[0]["n"], "Aggregate does not see it")
	vals, err := orders.Distinct(ctx, "status", bson.D{})
	require.NoError(t, err)
	assert.Equal(t, []any{"other"}, vals)
	res, err := orders.UpdateOne(ctx, bson.D{{Key: "_id", Value: o.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "revived"}}}})
	require.NoError(t, err)
	assert.Zero(t, res.MatchedCount, "updates do not reach it")
	require.NoError(t, orders.Delete(ctx, o), "deleting it again is deleting nothing")

	_, err = orders.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: other.ID}})
	require.NoError(t, err)
	assert.True(t, read(t, db, other.ID).Box.Gone, "FindOneAndDelete keeps a tombstone too")
}

// unadded returns a copy of e without what listeners added to the write.
func unadded(e *events.Event) events.Event {
	return events.Event{Type: e.Type, Op: e.Op, Collection: e.Collection, Coll: e.Coll, Registry: e.Registry,
		ModelType: e.ModelType, Model: e.Model, Document: e.Document, Filter: e.Filter, Update: e.Update, Upsert: e.Upsert}
}

// TestChecksHoldAfterEveryListener: a listener that would undo the outbox
// (drop the tombstone, the events or the hiding condition) fails the
// operation instead.
func TestChecksHoldAfterEveryListener(t *testing.T) {
	var undo func(e *events.Event)
	bus := events.NewBus()
	bus.Register(outbox.New())
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if undo != nil {
			undo(e)
		}
		return nil
	}), events.AsPolicy(), events.Order(100))
	db := srv.Database(t)
	orders, err := repo.New[*order](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	o := &order{Status: "placed"}
	require.NoError(t, orders.Insert(ctx, o))

	// Listeners only add to a write; a listener that overwrites the whole
	// event drops what the outbox added.
	undo = func(e *events.Event) { *e = unadded(e) }
	assert.ErrorIs(t, orders.Delete(ctx, o), outbox.ErrUnsupported, "tombstone removed")
	undo = func(e *events.Event) {
		keep := e.Additions().Keep
		*e = unadded(e)
		for _, k := range keep {
			e.Keep(k)
		}
	}
	o.Record("x", nil)
	assert.ErrorIs(t, orders.Save(ctx, o), outbox.ErrUnsupported, "events removed")
	undo = func(e *events.Event) {
		extra := e.Additions().Extra
		*e = unadded(e)
		for _, op := range extra {
			for _, f := range op.Value.(bson.D) {
				e.AddExtra(op.Key, f.Key, f.Value)
			}
		}
	}
	assert.ErrorIs(t, orders.Save(ctx, o), outbox.ErrUnsupported, "keep removed")
	undo = func(e *events.Event) {
		if e.Type == events.BeforeQuery {
			e.Filter = bson.D{}
		}
	}
	_, err = orders.Find(ctx, bson.D{})
	assert.ErrorIs(t, err, outbox.ErrUnsupported, "hiding removed")
	undo = nil
	assert.True(t, read(t, db, o.ID).Has)
	assert.Len(t, o.Recorded(), 1)
}
