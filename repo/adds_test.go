package repo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// sparse has a field that is left out of the document when empty.
type sparse struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
	Note             string `bson:"note,omitempty"`
}

// raw reads the stored document with _id id, as the server holds it.
func raw(t *testing.T, db *mongo.Database, coll string, id any) bson.M {
	t.Helper()
	var m bson.M
	err := db.Collection(coll).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	require.NoError(t, err)
	return m
}

// adder registers a listener that calls add on the events of type t.
func adder(bus *events.Bus, t events.Type, add func(e *events.Event)) {
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		add(e)
		return nil
	}), events.On(t))
}

// TestKeepSurvivesASave: a listener that keeps a field the model does not
// declare turns Save's replace into an update, which keeps that field and
// still removes a declared field the model left out, as a replace does.
func TestKeepSurvivesASave(t *testing.T) {
	bus, r, db := setup[*sparse](t, nil)
	adder(bus, events.BeforeSave, func(e *events.Event) { e.Keep("_side") })
	m := &sparse{Name: "a", Note: "n"}
	require.NoError(t, r.Insert(ctx, m))
	_, err := db.Collection("sparses").UpdateOne(ctx, bson.D{{Key: "_id", Value: m.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "_side", Value: "kept"}}}})
	require.NoError(t, err)

	m.Name, m.Note = "b", ""
	require.NoError(t, r.Save(ctx, m))
	doc := raw(t, db, "sparses", m.ID)
	assert.Equal(t, "kept", doc["_side"], "the kept field survives the Save")
	assert.Equal(t, "b", doc["name"])
	assert.NotContains(t, doc, "note", "a declared field the document lacks is removed, as by a replace")

	// A Save of a missing document still inserts it.
	_, err = db.Collection("sparses").DeleteOne(ctx, bson.D{{Key: "_id", Value: m.ID}})
	require.NoError(t, err)
	require.NoError(t, r.Save(ctx, m))
	assert.Equal(t, "b", raw(t, db, "sparses", m.ID)["name"], "the upsert inserted it")
}

// TestKeptFieldInTheDocumentIsRefused: a model that writes the field a
// listener keeps would overwrite it, so the Save is refused.
func TestKeptFieldInTheDocumentIsRefused(t *testing.T) {
	bus, r, db := setup[*sparse](t, nil)
	adder(bus, events.BeforeSave, func(e *events.Event) { e.Keep("note") })
	m := &sparse{Name: "a"}
	require.NoError(t, r.Insert(ctx, m))
	m.Note = "x"
	require.ErrorIs(t, r.Save(ctx, m), repo.ErrInvalidArgument)
	assert.NotContains(t, raw(t, db, "sparses", m.ID), "note", "nothing written")
}

// TestExtraGoesWithEveryWrite: what a listener adds with Event.AddExtra is
// written by the same write as the change, on Save, Update, UpdateOne,
// FindOneAndUpdate and a delete that a listener keeps as a tombstone.
func TestExtraGoesWithEveryWrite(t *testing.T) {
	bus, r, db := setup[*plain](t, nil)
	for _, typ := range []events.Type{events.BeforeSave, events.BeforeUpdate, events.BeforeDelete} {
		adder(bus, typ, func(e *events.Event) {
			if e.Op != events.OpInsert {
				e.AddExtra("$push", "_log", e.Op.String())
				e.AddExtra("$inc", "_n", 1)
			}
			if e.Type == events.BeforeDelete {
				e.AddTombstone("$set", "_gone", true)
			}
		})
	}
	m := &plain{Name: "a"}
	require.NoError(t, r.Insert(ctx, m))
	assert.NotContains(t, raw(t, db, "plains", m.ID), "_log")
	require.NoError(t, r.Save(ctx, m))
	require.NoError(t, r.Update(ctx, m))
	id := bson.D{{Key: "_id", Value: m.ID}}
	_, err := r.UpdateOne(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 3}}}})
	require.NoError(t, err)
	_, err = r.FindOneAndUpdate(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 4}}}})
	require.NoError(t, err)
	require.NoError(t, r.Delete(ctx, m))
	doc := raw(t, db, "plains", m.ID)
	require.NotNil(t, doc, "the tombstone keeps the document")
	assert.Equal(t, bson.A{"Replace", "Update", "UpdateOne", "FindOneAndUpdate", "Delete"}, doc["_log"])
	assert.EqualValues(t, 5, doc["_n"])
	assert.Equal(t, true, doc["_gone"])
	assert.EqualValues(t, 4, doc["age"])
}

// TestExtraMayNotWriteTheModel: a listener's addition may write only
// fields the model does not declare, and a write of many documents or an
// insert cannot carry what it cannot apply; each is refused before
// anything is written.
func TestExtraMayNotWriteTheModel(t *testing.T) {
	bus, r, db := setup[*plain](t, nil)
	var add func(e *events.Event)
	for _, typ := range []events.Type{events.BeforeSave, events.BeforeUpdate, events.BeforeDelete} {
		adder(bus, typ, func(e *events.Event) {
			if add != nil {
				add(e)
			}
		})
	}
	m := &plain{Name: "a", Age: 1}
	require.NoError(t, r.Insert(ctx, m))
	id := bson.D{{Key: "_id", Value: m.ID}}

	add = func(e *events.Event) { e.AddExtra("$set", "age", 99) }
	m.Name = "b"
	assert.ErrorIs(t, r.Save(ctx, m), repo.ErrInvalidArgument, "a declared field")
	add = func(e *events.Event) { e.AddExtra("$set", "_x.y", 1) }
	_, err := r.UpdateOne(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "_x", Value: 1}}}})
	assert.ErrorIs(t, err, repo.ErrInvalidArgument, "a field the update writes")
	add = func(e *events.Event) { e.AddExtra("$set", "_x", 1) }
	assert.ErrorIs(t, r.Insert(ctx, &plain{Name: "c"}), repo.ErrInvalidArgument, "an insert")
	add = func(e *events.Event) { e.AddExtra("$set", "_x", 1) }
	assert.ErrorIs(t, r.Delete(ctx, m), repo.ErrInvalidArgument, "a delete that stays a delete")
	add = func(e *events.Event) { e.AddGuard(bson.E{Key: "_x", Value: nil}, errors.New("no")) }
	_, err = r.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 2}}}})
	assert.ErrorIs(t, err, repo.ErrInvalidArgument, "a guarded write of many documents")
	_, err = r.UpdateOne(ctx, bson.D{{Key: "name", Value: "z"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 2}}}}, options.Update().SetUpsert(true))
	assert.ErrorIs(t, err, repo.ErrInvalidArgument, "a guarded upsert by another field than _id")

	doc := raw(t, db, "plains", m.ID)
	assert.Equal(t, "a", doc["name"])
	assert.EqualValues(t, 1, doc["age"])
	assert.NotContains(t, doc, "_x")
	assert.EqualValues(t, 1, count(t, db, "plains", nil))
}

// fieldName is a field name of its own type, which the driver encodes as
// a string.
type fieldName string

// TestExtraMayNotRenameIntoTheModel: a $rename in Extra or Tombstone may
// not move a value into a field the model declares, nor into one the
// update writes, whatever the target's Go type; nothing is written.
func TestExtraMayNotRenameIntoTheModel(t *testing.T) {
	bus, r, db := setup[*plain](t, nil)
	var add func(e *events.Event)
	for _, typ := range []events.Type{events.BeforeUpdate, events.BeforeDelete} {
		adder(bus, typ, func(e *events.Event) {
			if add != nil {
				add(e)
			}
		})
	}
	m := &plain{Name: "a", Age: 1}
	require.NoError(t, r.Insert(ctx, m))
	id := bson.D{{Key: "_id", Value: m.ID}}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "_y", Value: 1}}}}
	for name, rename := range map[string]func(e *events.Event){
		"a declared field":         func(e *events.Event) { e.AddExtra("$rename", "_x", "age") },
		"a declared field's part":  func(e *events.Event) { e.AddExtra("$rename", "_x", "name.first") },
		"_id":                      func(e *events.Event) { e.AddExtra("$rename", "_x", "_id") },
		"a named string type":      func(e *events.Event) { e.AddExtra("$rename", "_x", fieldName("age")) },
		"a field the update sets":  func(e *events.Event) { e.AddExtra("$rename", "_x", "_y") },
		"a target that is no name": func(e *events.Event) { e.AddExtra("$rename", "_x", 7) },
	} {
		add = rename
		_, err := r.UpdateOne(ctx, id, set)
		assert.ErrorIs(t, err, repo.ErrInvalidArgument, name)
	}
	add = func(e *events.Event) {
		if e.Type == events.BeforeDelete {
			e.AddTombstone("$rename", "_x", "name")
		}
	}
	assert.ErrorIs(t, r.Delete(ctx, m), repo.ErrInvalidArgument, "a tombstone's $rename into a declared field")

	doc := raw(t, db, "plains", m.ID)
	assert.Equal(t, "a", doc["name"])
	assert.NotContains(t, doc, "_y")
	add = func(e *events.Event) { e.AddExtra("$rename", "_x", "_z") }
	_, err := r.UpdateOne(ctx, id, set)
	assert.NoError(t, err, "a $rename between fields the model does not declare")
}

// TestGuardRefusesTheWrite: a guard that the stored document does not
// meet makes the write write nothing and fail with the guard's error; a
// missing document keeps each operation's own answer.
func TestGuardRefusesTheWrite(t *testing.T) {
	errFull := errors.New("full")
	bus, r, db := setup[*plain](t, nil)
	for _, typ := range []events.Type{events.BeforeSave, events.BeforeUpdate, events.BeforeDelete} {
		adder(bus, typ, func(e *events.Event) {
			if e.Op == events.OpInsert {
				return
			}
			e.AddExtra("$inc", "_n", 1)
			e.AddGuard(bson.E{Key: "_n", Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$gte", Value: 2}}}}}, errFull)
			if e.Type == events.BeforeDelete {
				e.AddTombstone("$set", "_gone", true)
			}
		})
	}
	m := &plain{Name: "a"}
	require.NoError(t, r.Insert(ctx, m))
	id := bson.D{{Key: "_id", Value: m.ID}}
	require.NoError(t, r.Save(ctx, m))
	require.NoError(t, r.Update(ctx, m))
	assert.EqualValues(t, 2, raw(t, db, "plains", m.ID)["_n"])

	m.Name = "changed"
	assert.ErrorIs(t, r.Save(ctx, m), errFull, "Save (an upsert by _id)")
	assert.ErrorIs(t, r.Update(ctx, m), errFull, "Update")
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 7}}}}
	_, err := r.UpdateOne(ctx, id, set)
	assert.ErrorIs(t, err, errFull, "UpdateOne")
	_, err = r.UpdateOne(ctx, id, set, options.Update().SetUpsert(true))
	assert.ErrorIs(t, err, errFull, "UpdateOne upsert by _id")
	_, err = r.FindOneAndUpdate(ctx, id, set)
	assert.ErrorIs(t, err, errFull, "FindOneAndUpdate")
	assert.ErrorIs(t, r.Delete(ctx, m), errFull, "Delete")
	_, err = r.FindOneAndDelete(ctx, id)
	assert.ErrorIs(t, err, errFull, "FindOneAndDelete")
	doc := raw(t, db, "plains", m.ID)
	assert.Equal(t, "a", doc["name"], "nothing written")
	assert.EqualValues(t, 2, doc["_n"])
	assert.EqualValues(t, 0, doc["age"])
	assert.NotContains(t, doc, "_gone")

	// A missing document: each operation answers as it does unguarded.
	gone := &plain{Name: "gone"}
	gone.ID = primitive.NewObjectID()
	assert.ErrorIs(t, r.Update(ctx, gone), repo.ErrNotFound)
	res, err := r.UpdateOne(ctx, bson.D{{Key: "_id", Value: gone.ID}}, set)
	require.NoError(t, err)
	assert.EqualValues(t, 0, res.MatchedCount)
	assert.NoError(t, r.Delete(ctx, gone))
}

// TestTombstoneYieldsToASoftDelete: a delete that one listener keeps as a
// tombstone and another turns into a soft delete is the soft delete, with
// the first listener's Extra, whichever runs first.
func TestTombstoneYieldsToASoftDelete(t *testing.T) {
	for _, softFirst := range []bool{false, true} {
		for _, soft := range []bool{false, true} {
			bus, r, db := setup[*plain](t, nil)
			tomb := func(e *events.Event) {
				e.AddTombstone("$set", "_gone", true)
				e.AddExtra("$set", "_ev", "deleted")
			}
			mark := func(e *events.Event) {
				if soft {
					e.Update = bson.D{{Key: "$set", Value: bson.D{{Key: "_deletedAt", Value: 1}}}}
				}
			}
			if softFirst {
				adder(bus, events.BeforeDelete, mark)
				adder(bus, events.BeforeDelete, tomb)
			} else {
				adder(bus, events.BeforeDelete, tomb)
				adder(bus, events.BeforeDelete, mark)
			}
			m := &plain{Name: "a"}
			require.NoError(t, r.Insert(ctx, m))
			require.NoError(t, r.Delete(ctx, m))
			doc := raw(t, db, "plains", m.ID)
			assert.Equal(t, "deleted", doc["_ev"], "soft %v, soft first %v", soft, softFirst)
			if soft {
				assert.Contains(t, doc, "_deletedAt")
				assert.NotContains(t, doc, "_gone")
			} else {
				assert.Contains(t, doc, "_gone")
				assert.NotContains(t, doc, "_deletedAt")
			}
		}
	}
}

// TestListenersGetTheRepositoryCollection: every event carries the
// collection the repository writes to, in the database it was given, and
// its registry.
func TestListenersGetTheRepositoryCollection(t *testing.T) {
	bus := events.NewBus()
	reg := model.Registry()
	var seen []string
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		seen = append(seen, e.Type.String()+" "+e.Coll.Database().Name()+"."+e.Coll.Name())
		if e.Registry != reg {
			return errors.New("not the repository's registry")
		}
		return nil
	}))
	db := srv.Database(t)
	r, err := repo.New[*plain](bus, repo.WithDatabase(db), repo.WithRegistry(reg))
	require.NoError(t, err)
	require.NoError(t, r.Insert(ctx, &plain{Name: "a"}))
	_, err = r.Count(ctx, bson.D{})
	require.NoError(t, err)
	want := db.Name() + ".plains"
	assert.Equal(t, []string{"BeforeConvert " + want, "BeforeSave " + want, "AfterSave " + want, "BeforeQuery " + want}, seen)
}

// TestGuardWithoutErrorIsRefused: a guard without the error its write
// fails with would let a guarded miss pass for a write, so the listener
// that adds one fails, and the Update writes nothing and says why.
func TestGuardWithoutErrorIsRefused(t *testing.T) {
	bus, r, db := setup[*plain](t, nil)
	guard := false
	adder(bus, events.BeforeSave, func(e *events.Event) {
		if guard {
			e.AddGuard(bson.E{Key: "_never", Value: true}, nil)
		}
	})
	m := &plain{Name: "a"}
	require.NoError(t, r.Insert(ctx, m))
	guard, m.Name = true, "b"
	err := r.Update(ctx, m)
	require.ErrorIs(t, err, events.ErrAborted)
	assert.ErrorContains(t, err, "AddGuard")
	assert.Equal(t, "a", raw(t, db, "plains", m.ID)["name"], "nothing written")
}
