package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

func anyListener(bus *events.Bus) {
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.On(events.BeforeConvert))
}

// listeningOrNot runs f in a subtest for a new repository of T without
// listeners, and in another for one with a BeforeConvert listener.
func listeningOrNot[T mgm.Model](t *testing.T, f func(t *testing.T, r *repo.Repository[T], db *mongo.Database, listen bool)) {
	for _, listen := range []bool{false, true} {
		t.Run(fmt.Sprint("listener=", listen), func(t *testing.T) {
			bus, r, db := setup[T](t, nil)
			if listen {
				anyListener(bus)
			}
			f(t, r, db, listen)
		})
	}
}

func rawDoc(t *testing.T, db *mongo.Database, coll string, id any) bson.M {
	t.Helper()
	var m bson.M
	require.NoError(t, db.Collection(coll).FindOne(ctx, bson.M{"_id": id}).Decode(&m))
	return m
}

// tenantKey's SetID derives Key from the tenant and the ID, when the model
// has a tenant: what it does depends on the model's state, so the
// repository must call it for every insert.
type tenantKey struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant"`
	Key              string `bson:"key"`
}

func (k *tenantKey) CollectionName() string { return "setid_tenant_keys" }
func (k *tenantKey) SetID(id any) {
	k.DefaultModel.SetID(id)
	if oid := id.(primitive.ObjectID); k.Tenant != "" && !oid.IsZero() {
		k.Key = k.Tenant + "/" + oid.Hex()
	} else if oid.IsZero() {
		k.Key = ""
	}
}

// TestSetIDDependingOnAnotherField: an insert with listeners calls the
// model's SetID, so that what it derives from the model's other fields is
// on the model and in the stored document.
func TestSetIDDependingOnAnotherField(t *testing.T) {
	bus, r, db := setup[*tenantKey](t, nil)
	anyListener(bus)
	m := &tenantKey{Tenant: "acme"}
	require.NoError(t, r.Insert(ctx, m))
	ms := []*tenantKey{{Tenant: "a"}, {Tenant: "b"}}
	require.NoError(t, r.InsertMany(ctx, ms))
	for _, m := range append(ms, m) {
		assert.Equal(t, m.Tenant+"/"+m.ID.Hex(), m.Key, "SetID was not called")
		assert.Equal(t, m.Tenant+"/"+m.ID.Hex(), rawDoc(t, db, "setid_tenant_keys", m.ID)["key"])
	}
}

// withRef's SetID records the ID in the Ref it points to, when it has one.
type ref struct{ ID primitive.ObjectID }

type withRef struct {
	mgm.DefaultModel `bson:",inline"`
	Ref              *ref           `bson:"-"`
	Tags             map[string]any `bson:"tags"`
}

func (w *withRef) CollectionName() string { return "setid_with_refs" }
func (w *withRef) SetID(id any) {
	w.DefaultModel.SetID(id)
	if w.Ref != nil {
		w.Ref.ID = w.ID
	}
	if w.Tags != nil {
		w.Tags["self"] = w.ID
	}
}

// TestSetIDThroughPointerAndMap: what SetID writes through a pointer field
// and into a map field is on the model and, for the map, stored.
func TestSetIDThroughPointerAndMap(t *testing.T) {
	bus, r, db := setup[*withRef](t, nil)
	anyListener(bus)
	m := &withRef{Ref: &ref{}, Tags: map[string]any{}}
	require.NoError(t, r.Insert(ctx, m))
	assert.Equal(t, m.ID, m.Ref.ID, "SetID's write through the pointer is missing")
	assert.Equal(t, m.ID, m.Tags["self"], "SetID's write into the map is missing")
	var stored struct {
		Tags bson.M `bson:"tags"`
	}
	require.NoError(t, db.Collection("setid_with_refs").FindOne(ctx, bson.M{"_id": m.ID}).Decode(&stored))
	assert.Equal(t, bson.M{"self": m.ID}, stored.Tags)
}

// registered's SetID registers the ID outside the model (an identity map).
var identity = struct {
	sync.Mutex
	ids []primitive.ObjectID
}{}

type registered struct {
	mgm.DefaultModel `bson:",inline"`
}

func (g *registered) CollectionName() string { return "setid_registered" }
func (g *registered) SetID(id any) {
	g.DefaultModel.SetID(id)
	identity.Lock()
	identity.ids = append(identity.ids, g.ID)
	identity.Unlock()
}

// TestSetIDWithStateOutsideTheModel: repo.New calls no SetID, and an
// insert calls it with the document's ID.
func TestSetIDWithStateOutsideTheModel(t *testing.T) {
	identity.ids = nil
	bus, r, _ := setup[*registered](t, nil)
	anyListener(bus)
	phantom := append([]primitive.ObjectID(nil), identity.ids...)
	m := &registered{}
	require.NoError(t, r.Insert(ctx, m))
	assert.Empty(t, phantom, "repo.New called SetID with IDs no document has")
	assert.Contains(t, identity.ids, m.ID, "SetID not called for the insert")
}

// strict's SetID refuses a zero ID (a validating SetID).
type strict struct {
	mgm.DefaultModel `bson:",inline"`
}

func (s *strict) CollectionName() string { return "setid_stricts" }
func (s *strict) SetID(id any) {
	if oid := id.(primitive.ObjectID); oid.IsZero() {
		panic("strict: zero ID")
	}
	s.DefaultModel.SetID(id)
}

// TestUndoWithSetIDRefusingZero: when a listener fails the insert, a model
// whose SetID refuses a zero ID gets its field back to zero, without a
// panic, and nothing is stored.
func TestUndoWithSetIDRefusingZero(t *testing.T) {
	bus, r, db := setup[*strict](t, nil)
	boom := errors.New("boom")
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return boom }), events.On(events.BeforeConvert))
	m := &strict{}
	var err error
	assert.NotPanics(t, func() { err = r.Insert(ctx, m) })
	assert.ErrorIs(t, err, boom)
	assert.True(t, m.ID.IsZero())
	ms := []*strict{{}, {}}
	assert.NotPanics(t, func() { err = r.InsertMany(ctx, ms) })
	assert.Zero(t, count(t, db, "setid_stricts", nil))
}

// stringSetID's SetID takes only strings although its _id is an ObjectID.
type stringSetID struct {
	mgm.DefaultModel `bson:",inline"`
}

func (p *stringSetID) CollectionName() string { return "setid_string_set_ids" }
func (p *stringSetID) SetID(id any)           { p.DefaultModel.SetID(id.(string)) }

// TestSetIDPanicsOnObjectID: a SetID that panics is an error naming SetID,
// with or without listeners; without them the driver gave the ID, so the
// document is stored.
func TestSetIDPanicsOnObjectID(t *testing.T) {
	listeningOrNot(t, func(t *testing.T, r *repo.Repository[*stringSetID], db *mongo.Database, listen bool) {
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, &stringSetID{}) })
		require.Error(t, err)
		assert.Contains(t, err.Error(), "SetID")
		assert.Contains(t, err.Error(), "panicked")
		stored := int64(0)
		if !listen {
			stored = 1 // the driver gave the ID, and the write came before SetID
		}
		assert.Equal(t, stored, count(t, db, "setid_string_set_ids", nil))
	})
}

// ptrModel embeds mgm.DefaultModel by pointer.
type ptrModel struct {
	*mgm.DefaultModel `bson:",inline"`
	Name              string `bson:"name"`
}

func (p *ptrModel) CollectionName() string { return "setid_ptr_models" }

// TestNilEmbeddedDefaultModel: a nil embedded *mgm.DefaultModel, whose
// hooks panic, is an error, not a panic.
func TestNilEmbeddedDefaultModel(t *testing.T) {
	bus, r, db := setup[*ptrModel](t, nil)
	for _, listen := range []bool{false, true} {
		if listen {
			anyListener(bus)
		}
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, &ptrModel{Name: "nil"}) }, "listener %v", listen)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "panicked")
	}
	assert.Zero(t, count(t, db, "setid_ptr_models", nil))
	m := &ptrModel{DefaultModel: &mgm.DefaultModel{}, Name: "ok"}
	require.NoError(t, r.Insert(ctx, m))
	assert.Equal(t, int64(1), count(t, db, "setid_ptr_models", bson.M{"_id": m.ID}))
}

// lazyGet's GetID reads through a pointer that constructors set.
type lazyGet struct {
	ID   primitive.ObjectID     `bson:"_id,omitempty"`
	Meta *struct{ Kind string } `bson:"-"`
}

func (l *lazyGet) CollectionName() string        { return "setid_lazy_gets" }
func (l *lazyGet) PrepareID(id any) (any, error) { return id, nil }
func (l *lazyGet) GetID() any {
	_ = l.Meta.Kind
	return l.ID
}
func (l *lazyGet) SetID(id any) { l.ID = id.(primitive.ObjectID) }

// TestNewWithGetIDPanickingOnNewModel: repo.New accepts a model whose
// GetID panics on a new model.
func TestNewWithGetIDPanickingOnNewModel(t *testing.T) {
	var err error
	require.NotPanics(t, func() { _, err = repo.New[*lazyGet](events.NewBus(), repo.WithDatabase(srv.Database(t))) })
	assert.NoError(t, err)
}

// valueSet's SetID has a value receiver: it can never set the ID.
type valueSet struct {
	ID primitive.ObjectID `bson:"_id,omitempty"`
}

func (v *valueSet) CollectionName() string        { return "setid_value_sets" }
func (v *valueSet) PrepareID(id any) (any, error) { return id, nil }
func (v *valueSet) GetID() any                    { return v.ID }

//lint:ignore SA4005 a value receiver sets a copy: the model under test
func (v valueSet) SetID(id any) { v.ID = id.(primitive.ObjectID) }

// TestValueReceiverSetID: a SetID with a value receiver, which sets a
// copy, is an error.
func TestValueReceiverSetID(t *testing.T) {
	listeningOrNot(t, func(t *testing.T, r *repo.Repository[*valueSet], db *mongo.Database, listen bool) {
		m := &valueSet{}
		err := r.Insert(ctx, m)
		require.ErrorIs(t, err, repo.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "value receiver")
		assert.True(t, m.ID.IsZero())
		stored := int64(0)
		if !listen {
			stored = 1 // the driver gave the ID, and the write came before SetID
		}
		assert.Equal(t, stored, count(t, db, "setid_value_sets", nil))
	})
}

// hook's SetID calls a func field when set.
type hook struct {
	mgm.DefaultModel `bson:",inline"`
	OnID             func(primitive.ObjectID) `bson:"-"`
}

func (h *hook) CollectionName() string { return "setid_hooks" }
func (h *hook) SetID(id any) {
	h.DefaultModel.SetID(id)
	if h.OnID != nil {
		h.OnID(h.ID)
	}
}

// TestSetIDCallingAFuncField: SetID calls a func field of the model with
// the new ID.
func TestSetIDCallingAFuncField(t *testing.T) {
	bus, r, _ := setup[*hook](t, nil)
	anyListener(bus)
	var got []primitive.ObjectID
	m := &hook{OnID: func(id primitive.ObjectID) { got = append(got, id) }}
	require.NoError(t, r.Insert(ctx, m))
	assert.Equal(t, []primitive.ObjectID{m.ID}, got)
}

// twoIDs embeds mgm.DefaultModel and declares its own _id too.
type twoIDs struct {
	mgm.DefaultModel `bson:",inline"`
	MyID             primitive.ObjectID `bson:"_id,omitempty"`
}

func (t2 *twoIDs) CollectionName() string { return "setid_two_ids" }

// TestTwoIDFields: repo.New refuses a model whose GetID reads another
// ObjectID than the _id field its document stores.
func TestTwoIDFields(t *testing.T) {
	_, err := repo.New[*twoIDs](events.NewBus(), repo.WithDatabase(srv.Database(t)))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "field MyID")
}
