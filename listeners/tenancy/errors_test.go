package tenancy_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestTenantMismatchNamesBothTenants: the error of every kind of
// mismatch names the tenant the model, document or filter names and the
// one the context acts as, so that the reader sees which side is wrong.
func TestTenantMismatchNamesBothTenants(t *testing.T) {
	r, _, _ := tenanted(t)
	theirs := seedTenants(t, r)
	cases := map[string]error{
		"Insert of a model naming globex": r.Insert(asAcme, &Account{Tenant: globex, Name: "x"}),
		"Update of globex's model":        r.Update(asAcme, theirs[0]),
		"Save of globex's model":          r.Save(asAcme, theirs[0]),
		"Delete of globex's model":        r.Delete(asAcme, theirs[0]),
	}
	_, err := r.UpdateOne(asAcme, bson.M{"tenant": globex, "name": "new"}, bson.M{"$set": bson.M{"balance": 1}}, options.Update().SetUpsert(true))
	cases["upsert naming globex"] = err
	_, err = r.UpdateOne(asAcme, bson.M{"name": "a1"}, bson.M{"$set": bson.M{"tenant": globex}})
	cases["update of the tenant field"] = err
	for name, err := range cases {
		require.ErrorIs(t, err, tenancy.ErrTenantMismatch, name)
		assert.ErrorContains(t, err, `"`+acme+`"`, name+": the current tenant")
		if name != "update of the tenant field" {
			assert.ErrorContains(t, err, `"`+globex+`"`, name+": the tenant named")
		}
	}
}
