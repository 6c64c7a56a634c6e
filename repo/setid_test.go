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

func rawDoc(t *testing.T, db *mongo.Database, coll string, id any) bson.M {
	t.Helper()
	var m bson.M
	require.NoError(t, db.Collection(coll).FindOne(ctx, bson.M{"_id": id}).Decode(&m))
	return m
}

// tenantKey's SetID derives Key from the tenant and the ID, when the model
// has a tenant. A new (zero) model has none, so the per-type probe sees
// SetID set only the _id field.
type tenantKey struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant"`
	Key              string `bson:"key"`
}

func (k *tenantKey) CollectionName() string { return "r7_tenant_keys" }
func (k *tenantKey) SetID(id any) {
	k.DefaultModel.SetID(id)
	if oid := id.(primitive.ObjectID); k.Tenant != "" && !oid.IsZero() {
		k.Key = k.Tenant + "/" + oid.Hex()
	} else if oid.IsZero() {
		k.Key = ""
	}
}

func TestSetIDDependingOnAnotherField(t *testing.T) {
	bus, r, db := setup[*tenantKey](t, nil)
	anyListener(bus)
	m := &tenantKey{Tenant: "acme"}
	require.NoError(t, r.Insert(ctx, m))
	ms := []*tenantKey{{Tenant: "a"}, {Tenant: "b"}}
	require.NoError(t, r.InsertMany(ctx, ms))
	for _, m := range append(ms, m) {
		assert.Equal(t, m.Tenant+"/"+m.ID.Hex(), m.Key, "SetID was not called")
		assert.Equal(t, m.Tenant+"/"+m.ID.Hex(), rawDoc(t, db, "r7_tenant_keys", m.ID)["key"])
	}
}

// withRef's SetID records the ID in the Ref it points to, when it has one.
type ref struct{ ID primitive.ObjectID }

type withRef struct {
	mgm.DefaultModel `bson:",inline"`
	Ref              *ref           `bson:"-"`
	Tags             map[string]any `bson:"tags"`
}

func (w *withRef) CollectionName() string { return "r7_with_refs" }
func (w *withRef) SetID(id any) {
	w.DefaultModel.SetID(id)
	if w.Ref != nil {
		w.Ref.ID = w.ID
	}
	if w.Tags != nil {
		w.Tags["self"] = w.ID
	}
}

func TestSetIDThroughPointerAndMap(t *testing.T) {
	bus, r, db := setup[*withRef](t, nil)
	anyListener(bus)
	m := &withRef{Ref: &ref{}, Tags: map[string]any{}}
	require.NoError(t, r.Insert(ctx, m))
	assert.Equal(t, m.ID, m.Ref.ID, "SetID's write through the pointer is missing")
	assert.Equal(t, m.ID, m.Tags["self"], "SetID's write into the map is missing")
	assert.Equal(t, bson.M{"self": m.ID}, rawDoc(t, db, "r7_with_refs", m.ID)["tags"])
}

// registered's SetID registers the ID outside the model (an identity map).
var identity = struct {
	sync.Mutex
	ids []primitive.ObjectID
}{}

type registered struct {
	mgm.DefaultModel `bson:",inline"`
}

func (g *registered) CollectionName() string { return "r7_registered" }
func (g *registered) SetID(id any) {
	g.DefaultModel.SetID(id)
	identity.Lock()
	identity.ids = append(identity.ids, g.ID)
	identity.Unlock()
}

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

func (s *strict) CollectionName() string { return "r7_stricts" }
func (s *strict) SetID(id any) {
	if oid := id.(primitive.ObjectID); oid.IsZero() {
		panic("strict: zero ID")
	}
	s.DefaultModel.SetID(id)
}

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
	assert.Zero(t, count(t, db, "r7_stricts", nil))
}

// stringSetID's SetID takes only strings although its _id is an ObjectID.
type stringSetID struct {
	mgm.DefaultModel `bson:",inline"`
}

func (p *stringSetID) CollectionName() string { return "r7_string_set_ids" }
func (p *stringSetID) SetID(id any)           { p.DefaultModel.SetID(id.(string)) }

func TestSetIDPanicsOnObjectID(t *testing.T) {
	for _, listen := range []bool{false, true} {
		t.Run(fmt.Sprint("listener=", listen), func(t *testing.T) {
			bus, r, db := setup[*stringSetID](t, nil)
			if listen {
				anyListener(bus)
			}
			var err error
			require.NotPanics(t, func() { err = r.Insert(ctx, &stringSetID{}) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), "SetID")
			assert.Contains(t, err.Error(), "panicked")
			stored := int64(0)
			if !listen {
				stored = 1 // the driver gave the ID, and the write came before SetID
			}
			assert.Equal(t, stored, count(t, db, "r7_string_set_ids", nil))
		})
	}
}

// ptrModel embeds mgm.DefaultModel by pointer.
type ptrModel struct {
	*mgm.DefaultModel `bson:",inline"`
	Name              string `bson:"name"`
}

func (p *ptrModel) CollectionName() string { return "r7_ptr_models" }

func TestNilEmbeddedDefaultModel(t *testing.T) {
	bus, r, db := setup[*ptrModel](t, nil)
	for _, listen := range []bool{false, true} {
		if listen {
			anyListener(bus)
		}
		var err error
		require.NotPanics(t, func() { err = r.Insert(ctx, &ptrModel{Name: "nil"}) }, "listener %v", listen)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "hook panicked")
	}
	assert.Zero(t, count(t, db, "r7_ptr_models", nil))
	m := &ptrModel{DefaultModel: &mgm.DefaultModel{}, Name: "ok"}
	require.NoError(t, r.Insert(ctx, m))
	assert.Equal(t, int64(1), count(t, db, "r7_ptr_models", bson.M{"_id": m.ID}))
}

// lazyGet's GetID reads through a pointer that constructors set.
type lazyGet struct {
	ID   primitive.ObjectID     `bson:"_id,omitempty"`
	Meta *struct{ Kind string } `bson:"-"`
}

func (l *lazyGet) CollectionName() string        { return "r7_lazy_gets" }
func (l *lazyGet) PrepareID(id any) (any, error) { return id, nil }
func (l *lazyGet) GetID() any {
	_ = l.Meta.Kind
	return l.ID
}
func (l *lazyGet) SetID(id any) { l.ID = id.(primitive.ObjectID) }

func TestNewWithGetIDPanickingOnNewModel(t *testing.T) {
	var err error
	require.NotPanics(t, func() { _, err = repo.New[*lazyGet](events.NewBus(), repo.WithDatabase(srv.Database(t))) })
	assert.NoError(t, err)
}

// valueSet's SetID has a value receiver: it can never set the ID.
type valueSet struct {
	ID primitive.ObjectID `bson:"_id,omitempty"`
}

func (v *valueSet) CollectionName() string        { return "r7_value_sets" }
func (v *valueSet) PrepareID(id any) (any, error) { return id, nil }
func (v *valueSet) GetID() any                    { return v.ID }
func (v valueSet) SetID(id any)                   { v.ID = id.(primitive.ObjectID) }

func TestValueReceiverSetID(t *testing.T) {
	for _, listen := range []bool{false, true} {
		t.Run(fmt.Sprint("listener=", listen), func(t *testing.T) {
			bus, r, db := setup[*valueSet](t, nil)
			if listen {
				anyListener(bus)
			}
			m := &valueSet{}
			err := r.Insert(ctx, m)
			require.ErrorIs(t, err, repo.ErrInvalidArgument)
			assert.Contains(t, err.Error(), "value receiver")
			assert.True(t, m.ID.IsZero())
			stored := int64(0)
			if !listen {
				stored = 1 // the driver gave the ID, and the write came before SetID
			}
			assert.Equal(t, stored, count(t, db, "r7_value_sets", nil))
		})
	}
}

// hook's SetID calls a func field when set.
type hook struct {
	mgm.DefaultModel `bson:",inline"`
	OnID             func(primitive.ObjectID) `bson:"-"`
}

func (h *hook) CollectionName() string { return "r7_hooks" }
func (h *hook) SetID(id any) {
	h.DefaultModel.SetID(id)
	if h.OnID != nil {
		h.OnID(h.ID)
	}
}

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

func (t2 *twoIDs) CollectionName() string { return "r7_two_ids" }

func TestTwoIDFields(t *testing.T) {
	_, err := repo.New[*twoIDs](events.NewBus(), repo.WithDatabase(srv.Database(t)))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "field MyID")
}
