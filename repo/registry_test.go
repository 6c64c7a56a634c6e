package repo_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestWithRegistryMustBeStrict: a registry that decodes structs with the
// driver's codec, which decodes a stored "Tenant" into the field stored
// as "tenant", is refused with an error that says what to do; the same
// registry made strict is accepted.
func TestWithRegistryMustBeStrict(t *testing.T) {
	db := srv.Database(t)
	_, err := repo.New[*plain](nil, repo.WithDatabase(db), repo.WithRegistry(bson.NewRegistry()))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "WithRegistry")
	assert.Contains(t, err.Error(), "model.RegisterStrict")

	reg := bson.NewRegistry()
	require.NoError(t, model.RegisterStrict(reg))
	r, err := repo.New[*plain](nil, repo.WithDatabase(db), repo.WithRegistry(reg))
	require.NoError(t, err)
	require.NoError(t, r.Insert(ctx, &plain{Name: "a"}))
	_, err = r.Collection().Collection.UpdateOne(ctx, bson.M{"name": "a"}, bson.M{"$set": bson.M{"Age": 9}})
	require.NoError(t, err)
	got, err := r.FindOne(ctx, bson.M{"name": "a"})
	require.NoError(t, err)
	assert.Zero(t, got.Age, "a case-folded key decoded into the field")
}
