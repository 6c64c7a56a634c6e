package encryption_test

import (
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// indexKeys returns the keys of coll's indexes, as extended JSON.
func indexKeys(t *testing.T, coll *mongo.Collection) string {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	var keys []string
	for _, s := range specs {
		keys = append(keys, s.KeysDocument.String())
	}
	return strings.Join(keys, " ")
}

// TestBlindIndexesWhereTheDataIs: each repository gets the index on each
// blind index in the collection it writes to, whichever database that is,
// and an equality query served by it finds the documents there; with
// WithoutIndexes it gets none.
func TestBlindIndexesWhereTheDataIs(t *testing.T) {
	db1, db2 := srv.Database(t), srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	for _, db := range []*mongo.Database{db1, db2} {
		patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
		require.NoError(t, err)
		assert.Contains(t, indexKeys(t, db.Collection("patients")), "email_bidx", db.Name())
		require.NoError(t, patients.Insert(ctx, &Patient{Email: "a@" + db.Name()}))
		found, err := patients.Find(ctx, bson.M{"email": "a@" + db.Name()})
		require.NoError(t, err)
		assert.Len(t, found, 1)
	}

	bare, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}}, encryption.WithoutIndexes())
	db3 := srv.Database(t)
	_, err := repo.New[*Patient](bare, repo.WithDatabase(db3))
	require.NoError(t, err)
	assert.NotContains(t, indexKeys(t, db3.Collection("patients")), "email_bidx")
}
