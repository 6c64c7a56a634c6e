package redteam_test

// Event.Collation and Event.Projection describe the operation's options so
// that policies can refuse them; the repository sends the options
// themselves. An ordinary listener, which runs before the policies, can
// clear the description.

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func TestDefendPluginHidesCollationAndProjection(t *testing.T) {
	var log wireLog
	w := wire(t, log.options())
	w.seed(t)
	p := &Patient{Email: "ann@acme.com", Notes: "n"}
	require.NoError(t, w.patients.Insert(asAcme, p))
	w.plugin(func(_ context.Context, e *events.Event) error {
		e.Collation, e.Projection = nil, nil
		return nil
	}, events.On(events.BeforeQuery))

	// Tenancy refuses a collation (it could make "acme" match "ACME");
	// here the find goes out with it.
	ci := &options.Collation{Locale: "en", Strength: 2}
	_, _ = w.accounts.Find(asAcme, bson.D{}, options.Find().SetCollation(ci))
	for _, c := range log.sent("find") {
		assert.NotEqual(t, "en", c.Lookup("collation", "locale").StringValue(),
			"a case-insensitive collation reached the server on a tenant query: %v", c)
	}

	// Encryption refuses a projection that computes values (the decryption
	// oracle of TestEncDefendFindProjectionInspected); here it goes out.
	proj := bson.D{{Key: "notes", Value: bson.D{{Key: "$literal", Value: "planted"}}}}
	_, _ = w.patients.FindOne(asAcme, bson.D{}, options.FindOne().SetProjection(proj))
	for _, c := range log.sent("find") {
		_, err := c.LookupErr("projection", "notes", "$literal")
		assert.Error(t, err, "a computing projection reached the server on an encrypted model: %v", c)
	}
}

// A plugin clears Event.Upsert on BeforeUpdate: Tenancy then neither
// stamps the upsert nor checks that it is stamped, and strips the tenant
// the repository seeded; the repository still sends upsert: true. The
// upserted document belongs to no tenant (on FerretDB, which does not
// copy equalities nested in $and).
func TestDefendPluginClearsUpsert(t *testing.T) {
	w := wire(t)
	w.plugin(func(_ context.Context, e *events.Event) error {
		if !e.Upsert {
			return nil
		}
		e.Upsert = false
		if u, ok := e.Update.(bson.D); ok {
			for i := range u {
				if u[i].Key == "$setOnInsert" {
					u[i].Value = bson.D{{Key: "name", Value: "orphan"}}
				}
			}
		}
		return nil
	}, events.On(events.BeforeUpdate))
	_, err := w.accounts.UpdateOne(asAcme, bson.M{"tenant": acme, "name": "orphan"},
		bson.M{"$set": bson.M{"x": 1}}, options.Update().SetUpsert(true))
	if err != nil {
		assert.Equal(t, 0, w.count(t, "accounts", nil), "a refused upsert writes nothing")
	}
	for _, d := range w.raw(t, "accounts", nil) {
		tenant, _ := d.Lookup("tenant").StringValueOK()
		assert.Equal(t, acme, tenant, "an acme upsert created a document outside acme: %v", d)
	}
}
