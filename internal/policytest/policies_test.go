package policytest_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Customer has all three policies: a tenant, an encrypted searchable email,
// a soft-delete mark, and a per-tenant number.
type Customer struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	No               int64      `bson:"no" auto:"inc,scope=tenant"`
	Email            string     `bson:"email" policy:"encrypt,eq"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// TestPoliciesTogether: tenancy, soft delete and encryption on one model,
// with AutoKeys, each still holding with the others rewriting the same
// filters and updates.
func TestPoliciesTogether(t *testing.T) {
	db := srv.Database(t)
	customers := allPolicies(t, db)

	same := "same@example.com"
	require.NoError(t, customers.Insert(asAcme, &Customer{Email: same}))
	require.NoError(t, customers.Insert(asGlobex, &Customer{Email: same}))
	res, err := customers.UpdateOne(asAcme, bson.M{"email": "new@example.com"}, bson.M{"$setOnInsert": bson.M{"no": int64(7)}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.UpsertedCount)

	for _, raw := range mongotest.Docs(t, db.Collection("customers"), nil) {
		assert.False(t, bytes.Contains(raw, []byte("example.com")), "no plaintext at rest: %s", raw)
		assert.NotEmpty(t, raw.Lookup("tenant").StringValue())
	}
	mine, err := customers.Find(asAcme, bson.M{"email": same})
	require.NoError(t, err)
	require.Len(t, mine, 1, "the blind index finds acme's, and only acme's")
	assert.Equal(t, acme, mine[0].Tenant)
	assert.Equal(t, int64(1), mine[0].No)
	up, err := customers.FindOne(asAcme, bson.M{"email": "new@example.com"})
	require.NoError(t, err)
	assert.Equal(t, acme, up.Tenant, "the upsert's document: stamped, encrypted, searchable")
	assert.Equal(t, int64(7), up.No)

	deleted, err := customers.DeleteMany(asAcme, bson.M{"email": same})
	require.NoError(t, err)
	assert.Equal(t, int64(1), deleted.DeletedCount)
	_, err = customers.FindOne(asAcme, bson.M{"email": same})
	assert.ErrorIs(t, err, repo.ErrNotFound, "soft-deleted")
	gone, err := customers.FindOne(softdelete.WithDeleted(asAcme), bson.M{"email": same})
	require.NoError(t, err)
	assert.Equal(t, same, gone.Email, "decrypted, with WithDeleted")
	theirs, err := customers.FindOne(asGlobex, bson.M{"email": same})
	require.NoError(t, err)
	assert.Nil(t, theirs.DeletedAt, "globex's is untouched")
	_, err = customers.Find(events.WithoutEvents(ctx), bson.D{})
	assert.ErrorIs(t, err, tenancy.ErrNoTenant)
}

// allPolicies returns a repository of Customer on db, on a bus with
// AutoKeys and the three policies.
func allPolicies(t *testing.T, db *mongo.Database) *repo.Repository[*Customer] {
	t.Helper()
	ten := tenancy.New()
	keys, err := autokeys.New(db, autokeys.WithScopeSource(ten))
	require.NoError(t, err)
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret(t)}})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(enc)
	bus.Register(ten)
	bus.Register(softdelete.New())
	customers, err := repo.New[*Customer](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return customers
}

// TestPolicyTagsNeedTheirPolicy: a model whose tags only a policy gives
// meaning to is refused on a bus without that policy, unless the caller
// says it knows.
func TestPolicyTagsNeedTheirPolicy(t *testing.T) {
	db := srv.Database(t)
	_, err := repo.New[*Account](events.NewBus(), repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `"tenant"`)
	_, err = repo.New[*Account](nil, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced, "no bus, no policy")
	_, err = repo.New[*Note](events.NewBus(), repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `"softdelete"`)
	_, err = repo.New[*Patient](events.NewBus(), repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `"encrypt"`)

	other := events.NewBus()
	other.Register(tenancy.New(), events.ForModel[*Invoice]())
	_, err = repo.New[*Account](other, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced, "a Tenancy for another model does not count")
	plain := events.NewBus()
	plain.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }))
	_, err = repo.New[*Account](plain, repo.WithDatabase(db), repo.Unenforced("tenant"))
	assert.NoError(t, err, "knowingly")
}
