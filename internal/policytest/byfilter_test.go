package policytest_test

import (
	"bytes"
	"testing"

	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestPoliciesHoldOnWritesByFilter: DeleteOne, ReplaceOne and
// FindOneAndReplace are confined to the tenant, stamp it, skip and mark
// soft-deleted documents, and store ciphertexts, as every other write;
// the stored documents show it.
func TestPoliciesHoldOnWritesByFilter(t *testing.T) {
	db := srv.Database(t)
	customers := allPolicies(t, db)
	require.NoError(t, customers.InsertMany(asAcme, []*Customer{{Email: "a1@x.org"}, {Email: "a2@x.org"}}))
	require.NoError(t, customers.InsertMany(asGlobex, []*Customer{{Email: "g1@x.org"}, {Email: "g2@x.org"}}))
	globexBefore := mongotest.Docs(t, db.Collection("customers"), bson.M{"tenant": globex})

	t.Run("tenancy", func(t *testing.T) {
		res, err := customers.DeleteOne(asAcme, bson.M{"email": "g1@x.org"})
		require.NoError(t, err)
		assert.Zero(t, res.DeletedCount, "globex's is out of reach")
		up, err := customers.ReplaceOne(asAcme, bson.M{"email": "g2@x.org"}, withID(&Customer{Email: "stolen@x.org"}))
		require.NoError(t, err)
		assert.Zero(t, up.MatchedCount)
		_, err = customers.FindOneAndReplace(asAcme, bson.M{"email": "g2@x.org"}, withID(&Customer{Email: "stolen@x.org"}))
		assert.ErrorIs(t, err, repo.ErrNotFound)
		_, err = customers.ReplaceOne(asAcme, bson.M{"email": "a1@x.org"}, &Customer{Tenant: globex, Email: "moved@x.org"})
		assert.ErrorIs(t, err, tenancy.ErrTenantMismatch, "a model naming another tenant")
		_, err = customers.ReplaceOne(asAcme, bson.M{"tenant": globex, "email": "new@x.org"}, &Customer{Email: "new@x.org"}, options.Replace().SetUpsert(true))
		assert.ErrorIs(t, err, tenancy.ErrTenantMismatch, "an upsert into another tenant")
		_, err = customers.DeleteOne(ctx, bson.D{})
		assert.ErrorIs(t, err, tenancy.ErrNoTenant)
		assert.Equal(t, globexBefore, mongotest.Docs(t, db.Collection("customers"), bson.M{"tenant": globex}), "globex's documents are byte for byte as they were")
	})

	t.Run("bulk", func(t *testing.T) {
		res, err := customers.BulkWrite(asAcme, []mongo.WriteModel{
			mongo.NewDeleteManyModel().SetFilter(bson.M{"tenant": globex}),
			mongo.NewUpdateManyModel().SetFilter(bson.D{}).SetUpdate(bson.M{"$set": bson.M{"tenant": globex}}),
			mongo.NewReplaceOneModel().SetFilter(bson.M{"email": "g1@x.org"}).SetReplacement(withID(&Customer{Email: "stolen@x.org"})),
			mongo.NewInsertOneModel().SetDocument(&Customer{Tenant: globex, Email: "planted@x.org"}),
			mongo.NewInsertOneModel().SetDocument(&Customer{Email: "bulk@x.org"}),
		}, options.BulkWrite().SetOrdered(false))
		require.ErrorIs(t, err, tenancy.ErrTenantMismatch, "moving acme's documents, and planting one in globex")
		assert.ErrorContains(t, err, "models[1]")
		assert.ErrorContains(t, err, "models[3]")
		assert.Zero(t, res.DeletedCount+res.MatchedCount)
		assert.Equal(t, int64(1), res.InsertedCount)
		assert.Equal(t, globexBefore, mongotest.Docs(t, db.Collection("customers"), bson.M{"tenant": globex}), "globex's documents are byte for byte as they were")
		raw, err := db.Collection("customers").FindOne(ctx, bson.M{"tenant": acme, "no": bson.M{"$gt": 2}}).Raw()
		require.NoError(t, err, "the bulk insert was stamped and numbered")
		assert.False(t, bytes.Contains(raw, []byte("bulk@x.org")), "and encrypted")
	})

	t.Run("encryption and stamping", func(t *testing.T) {
		mine, err := customers.FindOne(asAcme, bson.M{"email": "a1@x.org"})
		require.NoError(t, err)
		_, err = customers.ReplaceOne(asAcme, bson.M{"email": "a1@x.org"}, &Customer{Email: "a1b@x.org"})
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, "no ID: the ciphertexts could not be bound")
		repl := &Customer{Email: "a1b@x.org", No: mine.No}
		repl.ID = mine.ID
		up, err := customers.ReplaceOne(asAcme, bson.M{"email": "a1@x.org"}, repl)
		require.NoError(t, err)
		assert.Equal(t, int64(1), up.MatchedCount)
		raw, err := db.Collection("customers").FindOne(ctx, bson.M{"_id": mine.ID}).Raw()
		require.NoError(t, err)
		assert.False(t, bytes.Contains(raw, []byte("a1b@x.org")), "no plaintext at rest")
		assert.Equal(t, acme, raw.Lookup("tenant").StringValue(), "stamped")
		got, err := customers.FindOne(asAcme, bson.M{"email": "a1b@x.org"})
		require.NoError(t, err, "found by its blind index")
		assert.Equal(t, mine.ID, got.ID)

		repl2 := &Customer{Email: "a1c@x.org", No: mine.No}
		repl2.ID = mine.ID
		old, err := customers.FindOneAndReplace(asAcme, bson.M{"email": "a1b@x.org"}, repl2)
		require.NoError(t, err)
		assert.Equal(t, "a1b@x.org", old.Email, "returned decrypted")
	})

	t.Run("soft delete", func(t *testing.T) {
		res, err := customers.DeleteOne(asAcme, bson.M{"email": "a2@x.org"})
		require.NoError(t, err)
		assert.Equal(t, int64(1), res.DeletedCount)
		raw, err := db.Collection("customers").FindOne(ctx, bson.M{"tenant": acme, "deletedAt": bson.M{"$ne": nil}}).Raw()
		require.NoError(t, err, "marked, not removed")
		back := &Customer{Email: "back@x.org"}
		back.ID = raw.Lookup("_id").ObjectID()
		up, err := customers.ReplaceOne(asAcme, bson.M{"email": "a2@x.org"}, back)
		require.NoError(t, err)
		assert.Zero(t, up.MatchedCount, "a replace skips soft-deleted documents")
		after, err := db.Collection("customers").FindOne(ctx, bson.M{"_id": raw.Lookup("_id")}).Raw()
		require.NoError(t, err)
		assert.Equal(t, raw, after)
	})
}

// withID gives c a new ObjectID, as the replacement of an encrypted
// model needs one.
func withID(c *Customer) *Customer {
	c.ID = primitive.NewObjectID()
	return c
}
