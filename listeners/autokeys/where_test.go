package autokeys_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// uniqueOn reports whether coll has a unique index on field alone.
func uniqueOn(t *testing.T, coll *mongo.Collection, field string) bool {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	for _, s := range specs {
		var keys bson.D
		require.NoError(t, bson.Unmarshal(s.KeysDocument, &keys))
		if len(keys) == 1 && keys[0].Key == field && s.Unique != nil && *s.Unique {
			return true
		}
	}
	return false
}

// TestAutoKeysActWhereTheDataIs: with the counters in one database and
// the repository's collection in another that already holds numbered
// documents, AutoKeys moves the counter past those documents, builds the
// unique index there, and repairs a duplicate found there; the counters'
// database gets no index and no collection of the model.
func TestAutoKeysActWhereTheDataIs(t *testing.T) {
	counters, data := srv.Database(t), srv.Database(t)
	stored := data.Collection("users")
	_, err := stored.InsertMany(ctx, []any{bson.M{"longId": int64(1)}, bson.M{"longId": int64(2)}, bson.M{"longId": int64(5)}})
	require.NoError(t, err)
	keys, err := autokeys.New(counters)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	users, err := repo.New[*User](bus, repo.WithDatabase(data))
	require.NoError(t, err)

	u := &User{UserName: "first"}
	require.NoError(t, users.Insert(ctx, u))
	assert.Equal(t, int64(6), u.LongID, "the counter moved past the data already stored where the repository writes")
	assert.True(t, uniqueOn(t, stored, "longId"), "the unique index is where the data is")

	// A number written behind the counter's back is repaired where it is.
	_, err = stored.InsertOne(ctx, bson.M{"longId": int64(7)})
	require.NoError(t, err)
	v := &User{UserName: "second"}
	require.NoError(t, users.Insert(ctx, v), "7 came from the cached block, hit the stored 7, and was repaired")
	assert.Greater(t, v.LongID, int64(7))

	for _, n := range []int64{1, 2, 5, 6, 7, v.LongID} {
		c, err := stored.CountDocuments(ctx, bson.M{"longId": n})
		require.NoError(t, err)
		assert.Equal(t, int64(1), c, "no duplicate of %d", n)
	}
	names, err := counters.ListCollectionNames(ctx, bson.M{"name": "users"})
	require.NoError(t, err)
	assert.Empty(t, names, "nothing of the model in the counters' database")
}
