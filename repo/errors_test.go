package repo_test

import (
	"testing"

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
