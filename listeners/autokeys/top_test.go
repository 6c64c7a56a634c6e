package autokeys_test

import (
	"math"
	"testing"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestAutoKeysRefusesACallerKeyAtTheTop: an inc key the caller gives so
// close to the top of the field's range that the counter, once moved past
// it (as a restart does), could hand out no block after it, is refused by
// Insert, InsertMany, an upsert's $setOnInsert and an upsert's filter,
// naming the model, the field and the bound, and nothing is stored. A key
// at the bound is kept, and after a restart inserts still get keys.
func TestAutoKeysRefusesACallerKeyAtTheTop(t *testing.T) {
	users, _, db := keyed[*User](t)
	coll := db.Collection("users")
	const top = math.MaxInt64 - math.MaxInt64/4
	up := options.Update().SetUpsert(true)
	tries := map[string]func() error{
		"Insert": func() error { return users.Insert(ctx, &User{UserName: "i", LongID: math.MaxInt64}) },
		"InsertMany": func() error {
			return users.InsertMany(ctx, []*User{{UserName: "m1"}, {UserName: "m2", LongID: top + 1}})
		},
		"upsert $setOnInsert": func() error {
			_, err := users.UpdateOne(ctx, bson.D{{Key: "userName", Value: "s"}},
				bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "longId", Value: int64(math.MaxInt64)}}}}, up)
			return err
		},
		"upsert filter": func() error {
			_, err := users.UpdateOne(ctx, bson.D{{Key: "longId", Value: int64(math.MaxInt64 - 1)}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "userName", Value: "f"}}}}, up)
			return err
		},
	}
	for name, try := range tries {
		err := try()
		assert.ErrorIs(t, err, sequence.ErrInvalidArgument, name)
		assert.ErrorContains(t, err, "*autokeys_test.User field LongID", name)
		assert.ErrorContains(t, err, "above 6917529027641081856", name)
		n, cerr := coll.CountDocuments(ctx, bson.D{})
		require.NoError(t, cerr)
		if !assert.Zero(t, n, "%s stored a document", name) {
			_, err := coll.DeleteMany(ctx, bson.D{})
			require.NoError(t, err)
		}
	}

	require.NoError(t, users.Insert(ctx, &User{UserName: "at the bound", LongID: top}))
	again, _, _ := keyedOn[*User](t, db) // a restart: a new AutoKeys on the same data
	next := &User{UserName: "next"}
	require.NoError(t, again.Insert(ctx, next))
	assert.Equal(t, int64(top+1), next.LongID)
	// A key the counter handed out, above the bound, may be saved again.
	next.UserName = "saved"
	require.NoError(t, again.Save(ctx, next))
}
