package autokeys_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Pass is a tenant's soft-deleted document with a uuid key.
type Pass struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Ref              uuid.UUID  `bson:"ref" auto:"uuid"`
	Title            string     `bson:"title"`
	DeletedAt        *time.Time `bson:"deletedAt" policy:"softdelete,at"`
}

// TestAutoKeysUniqueIndexOnUUIDFields: a uuid key gets a unique index on
// the field alone, as an inc key does, so the database refuses a second
// document with a key another already holds, whether an Insert names it
// or an upsert's $setOnInsert does, in the same tenant, in another tenant,
// or when the holder is soft-deleted; only the first document holds it.
func TestAutoKeysUniqueIndexOnUUIDFields(t *testing.T) {
	users, _, db := keyed[*User](t)
	first := &User{UserName: "first"}
	require.NoError(t, users.Insert(ctx, first))
	assert.True(t, hasUniqueIndex(t, db.Collection("users"), "userId"))
	err := users.Insert(ctx, &User{UserName: "second", UserID: first.UserID})
	assert.True(t, mongo.IsDuplicateKeyError(err), "an Insert that names a held uuid key: %v", err)
	_, err = users.UpdateOne(ctx, bson.D{{Key: "userName", Value: "third"}},
		bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "userId", Value: first.UserID}}}}, options.Update().SetUpsert(true))
	assert.True(t, mongo.IsDuplicateKeyError(err), "an upsert that names a held uuid key: %v", err)
	n, err := db.Collection("users").CountDocuments(ctx, bson.D{{Key: "userId", Value: first.UserID}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "two documents share the uuid key %s", first.UserID)

	// Under tenancy and soft delete.
	db = srv.Database(t)
	keys, err := autokeys.New(db, autokeys.WithScopeSource(tenancy.New()))
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(tenancy.New())
	bus.Register(softdelete.New())
	bus.Register(keys)
	passes, err := repo.New[*Pass](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	acme, globex := tenancy.WithTenant(ctx, "acme"), tenancy.WithTenant(ctx, "globex")
	held := &Pass{Title: "held"}
	require.NoError(t, passes.Insert(acme, held))
	for name, write := range map[string]func() error{
		"same tenant":  func() error { return passes.Insert(acme, &Pass{Title: "a", Ref: held.Ref}) },
		"other tenant": func() error { return passes.Insert(globex, &Pass{Title: "g", Ref: held.Ref}) },
		"upsert": func() error {
			_, err := passes.UpdateOne(acme, bson.D{{Key: "title", Value: "u"}},
				bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "ref", Value: held.Ref}}}}, options.Update().SetUpsert(true))
			return err
		},
	} {
		err := write()
		assert.True(t, mongo.IsDuplicateKeyError(err), "%s: %v", name, err)
	}
	_, err = passes.DeleteOne(acme, bson.D{{Key: "_id", Value: held.ID}})
	require.NoError(t, err)
	err = passes.Insert(acme, &Pass{Title: "after delete", Ref: held.Ref})
	assert.True(t, mongo.IsDuplicateKeyError(err), "a soft-deleted document's uuid key reused: %v", err)
	n, err = db.Collection("passes").CountDocuments(ctx, bson.D{{Key: "ref", Value: primitive.Binary{Subtype: 4, Data: held.Ref[:]}}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "two documents share the uuid key %s", held.Ref)
}
