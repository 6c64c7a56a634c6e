package repo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// idmTwoIDsPtr embeds *mgm.DefaultModel and declares its own _id: GetID
// reads DefaultModel's ID, the document stores MyID.
type idmTwoIDsPtr struct {
	*mgm.DefaultModel `bson:",inline"`
	MyID              primitive.ObjectID `bson:"_id,omitempty"`
}

func (m *idmTwoIDsPtr) CollectionName() string { return "idm_two_ids_ptr" }

// TestTwoIDFieldsEmbeddedByPointer: New refuses it as it refuses twoIDs,
// looking through the nil embedded pointer of a new model; were it
// accepted, an insert would name one ID and store another.
func TestTwoIDFieldsEmbeddedByPointer(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	anyListener(bus)
	r, err := repo.New[*idmTwoIDsPtr](bus, repo.WithDatabase(db))
	if err != nil {
		require.ErrorIs(t, err, repo.ErrInvalidArgument)
		return
	}
	t.Errorf("repo.New accepted a model whose GetID reads another _id than the stored one")
	m := &idmTwoIDsPtr{DefaultModel: &mgm.DefaultModel{}}
	require.NoError(t, r.Insert(ctx, m))
	assert.Equal(t, int64(1), count(t, db, "idm_two_ids_ptr", bson.M{"_id": m.GetID()}),
		"no stored document has the model's ID %v", m.GetID())
}

// idmStrictPtr embeds *mgm.DefaultModel (so the repository cannot reach
// its field on a new model) and its SetID refuses a zero ID.
type idmStrictPtr struct {
	*mgm.DefaultModel `bson:",inline"`
}

func (s *idmStrictPtr) CollectionName() string { return "idm_strict_ptrs" }
func (s *idmStrictPtr) SetID(id any) {
	if oid := id.(primitive.ObjectID); oid.IsZero() {
		panic("idmStrictPtr: zero ID")
	}
	s.DefaultModel.SetID(id)
}

// idmStrictNoOmit declares its own _id without omitempty, and its SetID
// refuses a zero ID.
type idmStrictNoOmit struct {
	ID primitive.ObjectID `bson:"_id"`
}

func (s *idmStrictNoOmit) CollectionName() string        { return "idm_strict_no_omits" }
func (s *idmStrictNoOmit) PrepareID(id any) (any, error) { return id, nil }
func (s *idmStrictNoOmit) GetID() any                    { return s.ID }
func (s *idmStrictNoOmit) SetID(id any) {
	if oid := id.(primitive.ObjectID); oid.IsZero() {
		panic("idmStrictNoOmit: zero ID")
	}
	s.ID = id.(primitive.ObjectID)
}

// TestUndoStrictSetIDWithoutField: a failed insert leaves the model's
// ID at zero even when SetID refuses zero, for the models whose _id field
// objectIDField does not report (pointer-embedded DefaultModel, no
// omitempty).
func TestUndoStrictSetIDWithoutField(t *testing.T) {
	boom := errors.New("boom")
	fail := func(bus *events.Bus) {
		bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return boom }), events.On(events.BeforeSave))
	}
	t.Run("pointer", func(t *testing.T) {
		bus, r, db := setup[*idmStrictPtr](t, nil)
		fail(bus)
		m := &idmStrictPtr{DefaultModel: &mgm.DefaultModel{}}
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, m) })
		require.ErrorIs(t, err, boom)
		assert.True(t, m.ID.IsZero(), "the failed insert left ID %v on the model", m.ID)
		assert.Zero(t, count(t, db, "idm_strict_ptrs", nil))
	})
	t.Run("no omitempty", func(t *testing.T) {
		bus, r, db := setup[*idmStrictNoOmit](t, nil)
		fail(bus)
		m := &idmStrictNoOmit{}
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, m) })
		require.ErrorIs(t, err, boom)
		assert.True(t, m.ID.IsZero(), "the failed insert left ID %v on the model", m.ID)
		assert.Zero(t, count(t, db, "idm_strict_no_omits", nil))
	})
}

// TestGetIDPanicsAtInsert: lazyGet's GetID panics while Meta is nil.
// New accepts the type (TestNewWithGetIDPanickingOnNewModel); an insert
// returns an error, and does not panic.
func TestGetIDPanicsAtInsert(t *testing.T) {
	listeningOrNot(t, func(t *testing.T, r *repo.Repository[*lazyGet], db *mongo.Database, listen bool) {
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, &lazyGet{}) })
		require.Error(t, err)
		assert.Zero(t, count(t, db, "setid_lazy_gets", nil))
	})
}

// idmBadSet's SetID panics for a model marked Bad; the others take the ID.
type idmBadSet struct {
	mgm.DefaultModel `bson:",inline"`
	Bad              bool `bson:"bad"`
}

func (b *idmBadSet) CollectionName() string { return "idm_bad_sets" }
func (b *idmBadSet) SetID(id any) {
	if b.Bad {
		panic("idmBadSet: refused")
	}
	b.DefaultModel.SetID(id)
}

// TestInsertManyDriverIDsAfterAFailingSetID: without listeners the
// driver gives the IDs; when one model's SetID panics after the write,
// the models after it, stored too, still get theirs.
func TestInsertManyDriverIDsAfterAFailingSetID(t *testing.T) {
	_, r, db := setup[*idmBadSet](t, nil)
	ms := []*idmBadSet{{}, {Bad: true}, {}}
	err := r.InsertMany(ctx, ms)
	require.Error(t, err)
	stored := count(t, db, "idm_bad_sets", nil)
	t.Logf("stored %d of 3; err: %v", stored, err)
	if stored == 3 {
		assert.False(t, ms[2].ID.IsZero(), "models[2] is stored but its ID is lost")
		assert.Equal(t, int64(1), count(t, db, "idm_bad_sets", bson.M{"_id": ms[2].ID, "bad": false}))
	}
}

// idmStrID stores a string _id that the driver leaves out when empty, so
// the driver gives an ObjectID, which this SetID refuses.
type idmStrID struct {
	ID   string `bson:"_id,omitempty"`
	Name string `bson:"name"`
}

func (s *idmStrID) CollectionName() string        { return "idm_str_ids" }
func (s *idmStrID) PrepareID(id any) (any, error) { return id, nil }
func (s *idmStrID) GetID() any                    { return s.ID }
func (s *idmStrID) SetID(id any)                  { s.ID = id.(string) }

// TestInsertManyAfterSaveWhenSetIDFailsAfterTheWrite: Insert publishes
// AfterSave for a stored document whose SetID then failed; InsertMany does
// too, for every model it stored.
func TestInsertManyAfterSaveWhenSetIDFailsAfterTheWrite(t *testing.T) {
	bus, r, db := setup[*idmStrID](t, nil)
	var after atomic.Int64
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { after.Add(1); return nil }), events.On(events.AfterSave))

	err := r.Insert(ctx, &idmStrID{Name: "one"})
	require.Error(t, err)
	require.Equal(t, int64(1), count(t, db, "idm_str_ids", nil))
	assert.Equal(t, int64(1), after.Load(), "Insert: AfterSave for the stored document")

	after.Store(0)
	err = r.InsertMany(ctx, []*idmStrID{{Name: "a"}, {Name: "b"}})
	require.Error(t, err)
	stored := count(t, db, "idm_str_ids", nil) - 1
	assert.Equal(t, stored, after.Load(), "InsertMany stored %d documents and published AfterSave %d times", stored, after.Load())
}

// idmCreated's Created hook panics for a model marked Boom.
type idmCreated struct {
	mgm.DefaultModel `bson:",inline"`
	Boom             bool `bson:"boom"`
}

func (c *idmCreated) CollectionName() string { return "idm_createds" }
func (c *idmCreated) Created() error {
	if c.Boom {
		panic("idmCreated: boom")
	}
	return nil
}

// TestInsertManyAfterSaveWhenAHookPanicsAfterTheWrite: all models are
// stored; AfterSave reaches every one of them even when the Created
// hook of the first panics.
func TestInsertManyAfterSaveWhenAHookPanicsAfterTheWrite(t *testing.T) {
	bus, r, db := setup[*idmCreated](t, nil)
	var after atomic.Int64
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { after.Add(1); return nil }), events.On(events.AfterSave))
	ms := []*idmCreated{{Boom: true}, {}, {}}
	var err error
	require.NotPanics(t, func() { err = r.InsertMany(ctx, ms) })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hook panicked")
	require.Equal(t, int64(3), count(t, db, "idm_createds", nil))
	assert.Equal(t, int64(3), after.Load(), "3 documents stored, AfterSave published %d times", after.Load())
}

// idmOverride embeds mgm.DefaultModel but stores its own ID, with its own
// GetID and SetID: legitimate.
type idmOverride struct {
	mgm.DefaultModel `bson:",inline"`
	ID               primitive.ObjectID `bson:"_id,omitempty"`
}

func (o *idmOverride) CollectionName() string { return "idm_overrides" }
func (o *idmOverride) GetID() any             { return o.ID }
func (o *idmOverride) SetID(id any)           { o.ID = id.(primitive.ObjectID) }

// idmGenID is a generic model with its own ObjectID _id.
type idmGenID[T any] struct {
	Key primitive.ObjectID `bson:"_id,omitempty"`
	V   T                  `bson:"v"`
}

func (g *idmGenID[T]) CollectionName() string        { return "idm_gen_ids" }
func (g *idmGenID[T]) PrepareID(id any) (any, error) { return id, nil }
func (g *idmGenID[T]) GetID() any                    { return g.Key }
func (g *idmGenID[T]) SetID(id any)                  { g.Key = id.(primitive.ObjectID) }

// TestLegitimateShapes: New accepts them, and inserts with and without
// listeners store the model's ID.
func TestLegitimateShapes(t *testing.T) {
	for _, listen := range []bool{false, true} {
		bus, r, db := setup[*idmOverride](t, nil)
		if listen {
			anyListener(bus)
		}
		m := &idmOverride{}
		require.NoError(t, r.Insert(ctx, m))
		assert.Equal(t, int64(1), count(t, db, "idm_overrides", bson.M{"_id": m.ID}))
		bus2, g, db2 := setup[*idmGenID[string]](t, nil)
		if listen {
			anyListener(bus2)
		}
		gm := &idmGenID[string]{V: "x"}
		require.NoError(t, g.Insert(ctx, gm))
		assert.Equal(t, int64(1), count(t, db2, "idm_gen_ids", bson.M{"_id": gm.Key}))
		gs := []*idmGenID[string]{{}, {}}
		require.NoError(t, g.InsertMany(ctx, gs))
		assert.Equal(t, int64(3), count(t, db2, "idm_gen_ids", bson.M{"_id": bson.M{"$in": []any{gm.Key, gs[0].Key, gs[1].Key}}}))
	}
}
