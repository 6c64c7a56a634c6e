package policytest_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestCaseFoldedTenantStaysOwn: an update of "Tenant" (the tenant field's
// name in another letter case) passes the tenancy rules, which compare
// paths exactly, but the model does not decode it: acme's document reads
// as acme's, and an administrator's AllTenants read-and-save pass leaves
// it in acme, where globex cannot read it.
func TestCaseFoldedTenantStaysOwn(t *testing.T) {
	accounts, _, db := tenanted(t)
	a := &Account{Name: "planted"}
	require.NoError(t, accounts.Insert(asAcme, a))
	if _, err := accounts.UpdateOne(asAcme, bson.D{{Key: "_id", Value: a.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "Tenant", Value: globex}}}}); err == nil {
		got, err := accounts.FindOne(asAcme, bson.D{{Key: "_id", Value: a.ID}})
		require.NoError(t, err)
		assert.Equal(t, acme, got.Tenant, "acme's read returns a model of another tenant")
	}

	admin := tenancy.AllTenants(ctx)
	all, err := accounts.Find(admin, bson.D{})
	require.NoError(t, err)
	for _, m := range all {
		require.NoError(t, accounts.Save(admin, m))
	}
	theirs, err := accounts.Find(asGlobex, bson.D{})
	require.NoError(t, err)
	for _, m := range theirs {
		assert.NotEqual(t, "planted", m.Name, "acme's document now belongs to globex")
	}
	assert.Len(t, rawOf(t, db, acme), 1)
}

// TestCaseFoldedTenantPlantedRaw: a document another writer stored with
// "Tenant": "globex" besides "tenant": "acme" reads as acme's.
func TestCaseFoldedTenantPlantedRaw(t *testing.T) {
	accounts, _, db := tenanted(t)
	_, err := db.Collection("accounts").InsertOne(ctx, bson.D{
		{Key: "tenant", Value: acme}, {Key: "Tenant", Value: globex}, {Key: "name", Value: "raw"}})
	require.NoError(t, err)
	got, err := accounts.Find(asAcme, bson.D{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, acme, got[0].Tenant)
}
