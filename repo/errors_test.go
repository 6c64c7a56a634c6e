package repo_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// TestBadUpdateSaysWhatToDo: an update that is not update operators is
// refused with an error that names what was given and what to pass
// instead, never one that ends in a helper's "not a document".
func TestBadUpdateSaysWhatToDo(t *testing.T) {
	_, r, _ := setup[*item](t, nil)
	for name, c := range map[string]struct {
		update any
		says   []string
	}{
		"replacement":   {bson.M{"name": "y"}, []string{`field "name"`, "$set", "Save"}},
		"mixed":         {bson.D{{Key: "$set", Value: bson.M{"n": 1}}, {Key: "name", Value: "y"}}, []string{`field "name"`, "$set"}},
		"model pointer": {&item{Name: "y"}, []string{"*repo_test.item", "Save", "$set"}},
		"model value":   {item{Name: "y"}, []string{"repo_test.item", "Save", "$set"}},
		"string":        {"name", []string{"string", "$set"}},
		"empty":         {bson.D{}, []string{"empty update", "$set"}},
		"nil":           {nil, []string{"nil update"}},
	} {
		_, err := r.UpdateOne(ctx, bson.D{}, c.update)
		require.ErrorIs(t, err, repo.ErrInvalidArgument, name)
		assert.NotContains(t, err.Error(), "not a document", name)
		for _, s := range c.says {
			assert.ErrorContains(t, err, s, name)
		}
	}
}

// TestUpdateOfMissingModelSaysSo: Update of a model no stored document
// matches says that no document has its _id, before the driver's
// sentinel.
func TestUpdateOfMissingModelSaysSo(t *testing.T) {
	_, r, _ := setup[*item](t, nil)
	m := &item{Name: "ghost"}
	m.ID = primitive.NewObjectID()
	err := r.Update(ctx, m)
	require.ErrorIs(t, err, repo.ErrNotFound)
	assert.ErrorContains(t, err, "no stored document has this _id")
	assert.ErrorContains(t, err, m.ID.Hex())
}

// TestNilFilterIsRefusedEverywhere: every method that takes a filter,
// read or write, refuses a nil one (untyped, or a nil bson.D, bson.M or
// map) with ErrInvalidArgument and the method's name, before any listener
// sees it and with nothing written; bson.D{} matches every document.
func TestNilFilterIsRefusedEverywhere(t *testing.T) {
	bus, r, db := setup[*item](t, nil)
	require.NoError(t, r.InsertMany(ctx, []*item{{Name: "a"}, {Name: "b"}}))
	queried := 0
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { queried++; return nil }), events.On(events.BeforeQuery))
	before := rawDocs(t, db, "items", nil)
	set := bson.M{"$set": bson.M{"n": 1}}
	calls := map[string]func(filter any) error{
		"FindOne": func(f any) error { _, err := r.FindOne(ctx, f); return err },
		"Find":    func(f any) error { _, err := r.Find(ctx, f); return err },
		"Iter":    func(f any) error { _, err := r.Iter(ctx, f); return err },
		"All": func(f any) error {
			for _, err := range r.All(ctx, f) {
				return err
			}
			return nil
		},
		"Count":            func(f any) error { _, err := r.Count(ctx, f); return err },
		"Distinct":         func(f any) error { _, err := r.Distinct(ctx, "name", f); return err },
		"UpdateOne":        func(f any) error { _, err := r.UpdateOne(ctx, f, set); return err },
		"UpdateMany":       func(f any) error { _, err := r.UpdateMany(ctx, f, set); return err },
		"FindOneAndUpdate": func(f any) error { _, err := r.FindOneAndUpdate(ctx, f, set); return err },
		"FindOneAndDelete": func(f any) error { _, err := r.FindOneAndDelete(ctx, f); return err },
		"DeleteMany":       func(f any) error { _, err := r.DeleteMany(ctx, f); return err },
		"DeleteOne":        func(f any) error { _, err := r.DeleteOne(ctx, f); return err },
		"ReplaceOne":       func(f any) error { _, err := r.ReplaceOne(ctx, f, &item{Name: "r"}); return err },
		"FindOneAndReplace": func(f any) error {
			_, err := r.FindOneAndReplace(ctx, f, &item{Name: "r"})
			return err
		},
	}
	for method, call := range calls {
		for name, f := range map[string]any{"nil": nil, "nil bson.D": bson.D(nil), "nil bson.M": bson.M(nil), "nil map": map[string]any(nil)} {
			err := call(f)
			require.ErrorIs(t, err, repo.ErrInvalidArgument, "%s(%s)", method, name)
			assert.ErrorContains(t, err, method+": nil filter", "%s(%s)", method, name)
		}
	}
	assert.Zero(t, queried, "no listener saw a nil filter")
	assert.Equal(t, before, rawDocs(t, db, "items", nil), "nothing was written")

	all, err := r.Find(ctx, bson.D{})
	require.NoError(t, err)
	assert.Len(t, all, 2, "bson.D{} matches every document")
	n, err := r.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
}
