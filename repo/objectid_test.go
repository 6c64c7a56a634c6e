package repo_test

import (
	"context"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// keptID stores its _id even when zero (no omitempty), so the driver would
// keep a zero ObjectID: the repository must give it one itself.
type keptID struct {
	ID   primitive.ObjectID `bson:"_id"`
	Name string             `bson:"name"`
}

func (k *keptID) PrepareID(id any) (any, error) { return id, nil }
func (k *keptID) GetID() any                    { return k.ID }
func (k *keptID) SetID(id any)                  { k.ID = id.(primitive.ObjectID) }
func (k *keptID) CollectionName() string        { return "kept_ids" }

// With no listener, an insert leaves the ObjectID to the driver, as mgm's
// Create does, and the model gets the one stored; without an ID, a model
// whose encoding would keep the zero _id still gets a new one.
func TestInsertWithoutListenersGetsTheStoredID(t *testing.T) {
	_, plains, db := setup[*plain](t, nil)
	p := &plain{Name: "p"}
	require.NoError(t, plains.Insert(ctx, p))
	require.False(t, p.ID.IsZero())
	assert.Equal(t, int64(1), count(t, db, "plains", bson.M{"_id": p.ID, "name": "p"}))

	_, kept, db := setup[*keptID](t, nil)
	for range 2 {
		k := &keptID{Name: "k"}
		require.NoError(t, kept.Insert(ctx, k))
		require.False(t, k.ID.IsZero(), "a new ID, not the zero one")
		assert.Equal(t, int64(1), count(t, db, "kept_ids", bson.M{"_id": k.ID}))
	}
	assert.Zero(t, count(t, db, "kept_ids", bson.M{"_id": primitive.NilObjectID}))
}

// An InsertMany with no listener that fails part way leaves the models it
// wrote with the IDs they were stored under, and the others without.
func TestInsertManyWithoutListenersPartlyWritten(t *testing.T) {
	_, plains, db := setup[*plain](t, nil)
	stored := &plain{Name: "stored"}
	require.NoError(t, plains.Insert(ctx, stored))
	dup := &plain{Name: "dup"}
	dup.ID = stored.ID
	ms := []*plain{{Name: "a"}, {Name: "b"}, dup, {Name: "d"}}
	err := plains.InsertMany(ctx, ms)
	require.True(t, mongo.IsDuplicateKeyError(err), "%v", err)
	assert.Contains(t, err.Error(), "models[:2] were written")
	for _, m := range ms[:2] {
		require.False(t, m.ID.IsZero(), "%s keeps the ID it was stored under", m.Name)
		assert.Equal(t, int64(1), count(t, db, "plains", bson.M{"_id": m.ID, "name": m.Name}))
	}
	assert.Equal(t, stored.ID, dup.ID)
	assert.True(t, ms[3].ID.IsZero(), "not written")
	assert.Equal(t, int64(3), count(t, db, "plains", nil))
}

// With a listener, the ID is the model's from the first event, as before.
func TestInsertWithListenerNamesTheDocumentFirst(t *testing.T) {
	bus, plains, db := setup[*plain](t, nil)
	var seen []primitive.ObjectID
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		seen = append(seen, e.Model.(*plain).ID)
		return nil
	}), events.On(events.BeforeConvert))
	p := &plain{Name: "p"}
	require.NoError(t, plains.Insert(ctx, p))
	ms := []*plain{{Name: "a"}, {Name: "b"}}
	require.NoError(t, plains.InsertMany(ctx, ms))
	assert.Equal(t, []primitive.ObjectID{p.ID, ms[0].ID, ms[1].ID}, seen)
	for _, id := range seen {
		assert.False(t, id.IsZero())
		assert.Equal(t, int64(1), count(t, db, "plains", bson.M{"_id": id}))
	}
}

// hexID's SetID keeps the ID's hex in a field of its own as well.
type hexID struct {
	mgm.DefaultModel `bson:",inline"`
	Hex              string `bson:"hex"`
}

func (h *hexID) SetID(id any) {
	h.DefaultModel.SetID(id)
	if oid, _ := id.(primitive.ObjectID); !oid.IsZero() {
		h.Hex = oid.Hex()
	} else {
		h.Hex = ""
	}
}

// The repository writes a new ObjectID straight into the _id field only
// when SetID would do nothing more: a model whose SetID does more has it
// called, and stores what it sets.
func TestInsertCallsASetIDThatDoesMore(t *testing.T) {
	bus, hexes, db := setup[*hexID](t, nil)
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.On(events.BeforeConvert))
	h := &hexID{}
	require.NoError(t, hexes.Insert(ctx, h))
	ms := []*hexID{{}, {}}
	require.NoError(t, hexes.InsertMany(ctx, ms))
	for _, m := range append(ms, h) {
		require.False(t, m.ID.IsZero())
		assert.Equal(t, m.ID.Hex(), m.Hex)
		assert.Equal(t, int64(1), count(t, db, "hex_ids", bson.M{"_id": m.ID, "hex": m.Hex}))
	}
}
