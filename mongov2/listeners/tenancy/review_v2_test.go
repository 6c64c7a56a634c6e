// Written by hand: attacks on tenancy that only the v2 line's options allow.

package tenancy_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/mongov2/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/xoptions"
)

// TestTenancyInternalCommandFields: driver v2's internal options
// (xoptions' "addCommandFields") splice fields into the command the server
// receives, past every listener. Acting as acme, a second "filter" or
// "query" must not reach globex's documents: the repository refuses such
// options.
func TestTenancyInternalCommandFields(t *testing.T) {
	r, _, db := tenanted(t)
	seedTenants(t, r)
	before := rawOf(t, db, globex)
	all := bson.D{{Key: "filter", Value: bson.D{}}}

	find := options.Find()
	require.NoError(t, xoptions.SetInternalFindOptions(find, "addCommandFields", all))
	ms, err := r.Find(asAcme, bson.D{}, find)
	assert.ErrorContains(t, err, "driver-internal options")
	assert.ErrorIs(t, err, repo.ErrInvalidArgument)
	for _, m := range ms {
		assert.Equal(t, acme, m.Tenant, "Find read another tenant's document")
	}

	one := options.FindOne()
	require.NoError(t, xoptions.SetInternalFindOneOptions(one, "addCommandFields", all))
	m, err := r.FindOne(asAcme, bson.D{{Key: "name", Value: "b1"}}, one)
	if !assert.ErrorContains(t, err, "driver-internal options") {
		assert.Equal(t, acme, m.Tenant, "FindOne read another tenant's document")
	}

	count := options.Count()
	require.NoError(t, xoptions.SetInternalCountOptions(count, "addCommandFields", bson.D{{Key: "query", Value: bson.D{}}}))
	n, err := r.Count(asAcme, bson.D{}, count)
	assert.ErrorContains(t, err, "driver-internal options")
	assert.LessOrEqual(t, n, int64(2), "Count counted another tenant's documents")

	upd := options.UpdateMany()
	require.NoError(t, xoptions.SetInternalUpdateManyOptions(upd, "addCommandFields", bson.D{{Key: "ordered", Value: false}}))
	_, err = r.UpdateMany(asAcme, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "balance", Value: 0}}}}, upd)
	assert.ErrorContains(t, err, "driver-internal options")
	assert.Equal(t, before, rawOf(t, db, globex), "globex's documents changed")
}
