package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// r8TwoIDsPtr embeds *mgm.DefaultModel and declares its own _id: GetID
// reads DefaultModel's ID, the document stores MyID.
type r8TwoIDsPtr struct {
	*mgm.DefaultModel `bson:",inline"`
	MyID              primitive.ObjectID `bson:"_id,omitempty"`
}

func (m *r8TwoIDsPtr) CollectionName() string { return "r8_two_ids_ptr" }

// TestR8TwoIDFieldsEmbeddedByPointer: New must refuse it as it refuses
// twoIDs; if it accepts, an insert names one ID and stores another.
func TestR8TwoIDFieldsEmbeddedByPointer(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	anyListener(bus)
	r, err := repo.New[*r8TwoIDsPtr](bus, repo.WithDatabase(db))
	if err != nil {
		require.ErrorIs(t, err, repo.ErrInvalidArgument)
		return
	}
	t.Errorf("repo.New accepted a model whose GetID reads another _id than the stored one")
	m := &r8TwoIDsPtr{DefaultModel: &mgm.DefaultModel{}}
	require.NoError(t, r.Insert(ctx, m))
	assert.Equal(t, int64(1), count(t, db, "r8_two_ids_ptr", bson.M{"_id": m.GetID()}),
		"no stored document has the model's ID %v", m.GetID())
}

// r8StrictPtr embeds *mgm.DefaultModel (so the repository cannot reach
// its field on a new model) and its SetID refuses a zero ID.
type r8StrictPtr struct {
	*mgm.DefaultModel `bson:",inline"`
}

func (s *r8StrictPtr) CollectionName() string { return "r8_strict_ptrs" }
func (s *r8StrictPtr) SetID(id any) {
	if oid := id.(primitive.ObjectID); oid.IsZero() {
		panic("r8StrictPtr: zero ID")
	}
	s.DefaultModel.SetID(id)
}

// r8StrictNoOmit declares its own _id without omitempty, and its SetID
// refuses a zero ID.
type r8StrictNoOmit struct {
	ID primitive.ObjectID `bson:"_id"`
}

func (s *r8StrictNoOmit) CollectionName() string        { return "r8_strict_no_omits" }
func (s *r8StrictNoOmit) PrepareID(id any) (any, error) { return id, nil }
func (s *r8StrictNoOmit) GetID() any                    { return s.ID }
func (s *r8StrictNoOmit) SetID(id any) {
	if oid := id.(primitive.ObjectID); oid.IsZero() {
		panic("r8StrictNoOmit: zero ID")
	}
	s.ID = id.(primitive.ObjectID)
}

// TestR8UndoStrictSetIDWithoutField: a failed insert must leave the model's
// ID at zero even when SetID refuses zero, for the models whose _id field
// objectIDField does not report (pointer-embedded DefaultModel, no
// omitempty).
func TestR8UndoStrictSetIDWithoutField(t *testing.T) {
	boom := errors.New("boom")
	fail := func(bus *events.Bus) {
		bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return boom }), events.On(events.BeforeSave))
	}
	t.Run("pointer", func(t *testing.T) {
		bus, r, db := setup[*r8StrictPtr](t, nil)
		fail(bus)
		m := &r8StrictPtr{DefaultModel: &mgm.DefaultModel{}}
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, m) })
		require.ErrorIs(t, err, boom)
		assert.True(t, m.ID.IsZero(), "the failed insert left ID %v on the model", m.ID)
		assert.Zero(t, count(t, db, "r8_strict_ptrs", nil))
	})
	t.Run("no omitempty", func(t *testing.T) {
		bus, r, db := setup[*r8StrictNoOmit](t, nil)
		fail(bus)
		m := &r8StrictNoOmit{}
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, m) })
		require.ErrorIs(t, err, boom)
		assert.True(t, m.ID.IsZero(), "the failed insert left ID %v on the model", m.ID)
		assert.Zero(t, count(t, db, "r8_strict_no_omits", nil))
	})
}

// TestR8GetIDPanicsAtInsert: lazyGet's GetID panics while Meta is nil.
// New accepts the type (TestNewWithGetIDPanickingOnNewModel); an insert
// must return an error, not panic.
func TestR8GetIDPanicsAtInsert(t *testing.T) {
	for _, listen := range []bool{false, true} {
		t.Run(fmt.Sprint("listener=", listen), func(t *testing.T) {
			bus, r, db := setup[*lazyGet](t, nil)
			if listen {
				anyListener(bus)
			}
			var err error
			require.NotPanics(t, func() { err = r.Insert(ctx, &lazyGet{}) })
			require.Error(t, err)
			assert.Zero(t, count(t, db, "setid_lazy_gets", nil))
		})
	}
}

// r8BadSet's SetID panics for a model marked Bad; the others take the ID.
type r8BadSet struct {
	mgm.DefaultModel `bson:",inline"`
	Bad              bool `bson:"bad"`
}

func (b *r8BadSet) CollectionName() string { return "r8_bad_sets" }
func (b *r8BadSet) SetID(id any) {
	if b.Bad {
		panic("r8BadSet: refused")
	}
	b.DefaultModel.SetID(id)
}

// TestR8InsertManyDriverIDsAfterAFailingSetID: without listeners the
// driver gives the IDs; when one model's SetID panics after the write,
// the models after it are stored but never get their IDs.
func TestR8InsertManyDriverIDsAfterAFailingSetID(t *testing.T) {
	_, r, db := setup[*r8BadSet](t, nil)
	ms := []*r8BadSet{{}, {Bad: true}, {}}
	err := r.InsertMany(ctx, ms)
	require.Error(t, err)
	stored := count(t, db, "r8_bad_sets", nil)
	t.Logf("stored %d of 3; err: %v", stored, err)
	if stored == 3 {
		assert.False(t, ms[2].ID.IsZero(), "models[2] is stored but its ID is lost")
		assert.Equal(t, int64(1), count(t, db, "r8_bad_sets", bson.M{"_id": ms[2].ID, "bad": false}))
	}
}

// r8StrID stores a string _id that the driver leaves out when empty, so
// the driver gives an ObjectID, which this SetID refuses.
type r8StrID struct {
	ID   string `bson:"_id,omitempty"`
	Name string `bson:"name"`
}

func (s *r8StrID) CollectionName() string        { return "r8_str_ids" }
func (s *r8StrID) PrepareID(id any) (any, error) { return id, nil }
func (s *r8StrID) GetID() any                    { return s.ID }
func (s *r8StrID) SetID(id any)                  { s.ID = id.(string) }

// TestR8InsertManyAfterSaveWhenSetIDFailsAfterTheWrite: Insert publishes
// AfterSave for a stored document whose SetID then failed; InsertMany must
// too, for every model it stored.
func TestR8InsertManyAfterSaveWhenSetIDFailsAfterTheWrite(t *testing.T) {
	bus, r, db := setup[*r8StrID](t, nil)
	var after atomic.Int64
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { after.Add(1); return nil }), events.On(events.AfterSave))

	err := r.Insert(ctx, &r8StrID{Name: "one"})
	require.Error(t, err)
	require.Equal(t, int64(1), count(t, db, "r8_str_ids", nil))
	assert.Equal(t, int64(1), after.Load(), "Insert: AfterSave for the stored document")

	after.Store(0)
	err = r.InsertMany(ctx, []*r8StrID{{Name: "a"}, {Name: "b"}})
	require.Error(t, err)
	stored := count(t, db, "r8_str_ids", nil) - 1
	assert.Equal(t, stored, after.Load(), "InsertMany stored %d documents and published AfterSave %d times", stored, after.Load())
}

// r8Created's Created hook panics for a model marked Boom.
type r8Created struct {
	mgm.DefaultModel `bson:",inline"`
	Boom             bool `bson:"boom"`
}

func (c *r8Created) CollectionName() string { return "r8_createds" }
func (c *r8Created) Created() error {
	if c.Boom {
		panic("r8Created: boom")
	}
	return nil
}

// TestR8InsertManyAfterSaveWhenAHookPanicsAfterTheWrite: all models are
// stored; AfterSave must reach every one of them even when the Created
// hook of the first panics.
func TestR8InsertManyAfterSaveWhenAHookPanicsAfterTheWrite(t *testing.T) {
	bus, r, db := setup[*r8Created](t, nil)
	var after atomic.Int64
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { after.Add(1); return nil }), events.On(events.AfterSave))
	ms := []*r8Created{{Boom: true}, {}, {}}
	var err error
	require.NotPanics(t, func() { err = r.InsertMany(ctx, ms) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hook panicked")
	require.Equal(t, int64(3), count(t, db, "r8_createds", nil))
	assert.Equal(t, int64(3), after.Load(), "3 documents stored, AfterSave published %d times", after.Load())
}

// TestR8FindOneAndReplaceUpsertLosesTheID: an upsert by FindOneAndReplace
// with the default ReturnDocument (Before) stores a document; the model,
// which had no ID, must name it afterwards.
func TestR8FindOneAndReplaceUpsertLosesTheID(t *testing.T) {
	for _, listen := range []bool{false, true} {
		t.Run(fmt.Sprint("listener=", listen), func(t *testing.T) {
			bus, r, db := setup[*setidPlain](t, nil)
			if listen {
				anyListener(bus)
			}
			m := &setidPlain{Name: "up"}
			_, err := r.FindOneAndReplace(ctx, bson.M{"name": "up"}, m, options.FindOneAndReplace().SetUpsert(true))
			t.Logf("err: %v", err)
			require.Equal(t, int64(1), count(t, db, "setid_plains", nil))
			assert.False(t, m.ID.IsZero(), "a document was inserted, the model has no ID")
			assert.Equal(t, int64(1), count(t, db, "setid_plains", bson.M{"_id": m.ID}))
		})
	}
}

// TestR8ReplaceUpsertEventsNameTheDocument: with listeners, every event of
// an upsert that inserts names the document (the contract's first point).
func TestR8ReplaceUpsertEventsNameTheDocument(t *testing.T) {
	bus, r, db := setup[*setidPlain](t, nil)
	var zeroSeen atomic.Int64
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if m, ok := e.Model.(*setidPlain); ok && m.ID.IsZero() {
			zeroSeen.Add(1)
		}
		return nil
	}), events.On(events.BeforeConvert, events.BeforeSave))
	m := &setidPlain{Name: "rep"}
	res, err := r.ReplaceOne(ctx, bson.M{"name": "rep"}, m, options.Replace().SetUpsert(true))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.UpsertedCount)
	assert.Equal(t, int64(1), count(t, db, "setid_plains", bson.M{"_id": m.ID}))
	assert.Zero(t, zeroSeen.Load(), "events of the upsert named no document")
}

// r8Override embeds mgm.DefaultModel but stores its own ID, with its own
// GetID and SetID: legitimate.
type r8Override struct {
	mgm.DefaultModel `bson:",inline"`
	ID               primitive.ObjectID `bson:"_id,omitempty"`
}

func (o *r8Override) CollectionName() string { return "r8_overrides" }
func (o *r8Override) GetID() any             { return o.ID }
func (o *r8Override) SetID(id any)           { o.ID = id.(primitive.ObjectID) }

// r8GenID is a generic model with its own ObjectID _id.
type r8GenID[T any] struct {
	Key primitive.ObjectID `bson:"_id,omitempty"`
	V   T                  `bson:"v"`
}

func (g *r8GenID[T]) CollectionName() string        { return "r8_gen_ids" }
func (g *r8GenID[T]) PrepareID(id any) (any, error) { return id, nil }
func (g *r8GenID[T]) GetID() any                    { return g.Key }
func (g *r8GenID[T]) SetID(id any)                  { g.Key = id.(primitive.ObjectID) }

// TestR8LegitimateShapes: New accepts them, and inserts with and without
// listeners store the model's ID.
func TestR8LegitimateShapes(t *testing.T) {
	for _, listen := range []bool{false, true} {
		bus, r, db := setup[*r8Override](t, nil)
		if listen {
			anyListener(bus)
		}
		m := &r8Override{}
		require.NoError(t, r.Insert(ctx, m))
		assert.Equal(t, int64(1), count(t, db, "r8_overrides", bson.M{"_id": m.ID}))
		bus2, g, db2 := setup[*r8GenID[string]](t, nil)
		if listen {
			anyListener(bus2)
		}
		gm := &r8GenID[string]{V: "x"}
		require.NoError(t, g.Insert(ctx, gm))
		assert.Equal(t, int64(1), count(t, db2, "r8_gen_ids", bson.M{"_id": gm.Key}))
		gs := []*r8GenID[string]{{}, {}}
		require.NoError(t, g.InsertMany(ctx, gs))
		assert.Equal(t, int64(3), count(t, db2, "r8_gen_ids", bson.M{"_id": bson.M{"$in": []any{gm.Key, gs[0].Key, gs[1].Key}}}))
	}
}
