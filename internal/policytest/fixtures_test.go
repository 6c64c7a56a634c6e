package policytest_test

// Fixtures shared with the single-policy tests of listeners/tenancy,
// listeners/softdelete and listeners/encryption, for the tests of the
// policies together.

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

var ctx = context.Background()

type userKey struct{}

// Account is a tenant's document, numbered per tenant.
type Account struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant"`
	No               int64  `bson:"no" auto:"inc,scope=tenant"`
	Name             string `bson:"name"`
	Balance          int    `bson:"balance"`
}

const acme, globex = "acme", "globex"

var (
	asAcme   = tenancy.WithTenant(ctx, acme)
	asGlobex = tenancy.WithTenant(ctx, globex)
)

// tenanted returns a repository for Account with AutoKeys and Tenancy, and
// its bus.
func tenanted(t *testing.T) (*repo.Repository[*Account], *events.Bus, *mongo.Database) {
	t.Helper()
	db := srv.Database(t)
	ten := tenancy.New()
	keys, err := autokeys.New(db, autokeys.WithScopeSource(ten))
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(ten)
	r, err := repo.New[*Account](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, bus, db
}

// seedTenants stores two accounts for each tenant, and returns globex's.
func seedTenants(t *testing.T, r *repo.Repository[*Account]) []*Account {
	t.Helper()
	require.NoError(t, r.InsertMany(asAcme, []*Account{{Name: "a1", Balance: 1}, {Name: "a2", Balance: 2}}))
	theirs := []*Account{{Name: "b1", Balance: 10}, {Name: "b2", Balance: 20}}
	require.NoError(t, r.InsertMany(asGlobex, theirs))
	return theirs
}

// rawOf returns the collection's documents of one tenant, raw, by _id.
func rawOf(t *testing.T, db *mongo.Database, tenant string) []bson.Raw {
	return mongotest.Docs(t, db.Collection("accounts"), bson.M{"tenant": tenant})
}

func rawCount(t *testing.T, db *mongo.Database) int64 {
	t.Helper()
	n, err := db.Collection("accounts").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	return n
}

// Note is soft-deleted.
type Note struct {
	mgm.DefaultModel `bson:",inline"`
	Text             string     `bson:"text"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
	DeletedBy        string     `bson:"deletedBy,omitempty" policy:"softdelete,by"`
}

var deletedAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func softDeleted[T mgm.Model](t *testing.T) (*repo.Repository[T], *mongo.Database) {
	t.Helper()
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(softdelete.New(
		softdelete.WithClock(func() time.Time { return deletedAt }),
		softdelete.WithActor(func(c context.Context) (any, error) { return c.Value(userKey{}), nil })))
	r, err := repo.New[T](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, db
}

// Patient is the model, plus a plain field to filter on.
type Patient struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string    `bson:"email" policy:"encrypt,eq"`
	Notes            string    `bson:"notes" policy:"encrypt"`
	Birth            time.Time `bson:"birth" policy:"encrypt"`
	Ward             string    `bson:"ward"`
}

func secret(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// Invoice belongs to a tenant and is numbered per tenant.
type Invoice struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant"`
	No               int64  `bson:"no" auto:"inc,scope=tenant"`
	Amount           int    `bson:"amount"`
}
