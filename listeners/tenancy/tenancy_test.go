package tenancy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

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
	asAdmin  = tenancy.AllTenants(ctx)
)

// tenanted returns a repository for Account with AutoKeys and Tenancy, and
// its bus.
func tenanted(t *testing.T) (*repo.Repository[*Account], *events.Bus, *mongo.Database) {
	t.Helper()
	db := srv.PooledDatabase(t)
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

// injected are filters with which tenant acme tries to reach globex.
var injected = map[string]any{
	"$or naming globex": bson.M{"$or": bson.A{bson.M{"tenant": globex}, bson.M{"name": "a1"}}},
	"tenant globex":     bson.M{"tenant": globex},
	"empty":             bson.D{}, // nil is refused before any listener runs
	"$nor":              bson.M{"$nor": bson.A{bson.M{"tenant": acme}}},
	"$and":              bson.D{{Key: "$and", Value: bson.A{bson.M{"tenant": globex}}}},
	"$in":               bson.M{"tenant": bson.M{"$in": bson.A{globex, acme}}},
	"$ne":               bson.M{"tenant": bson.M{"$ne": acme}},
	"struct":            struct{ Tenant string }{globex},
}

// TestTenancyAttacks: acting as acme, every repository method is turned on
// globex's documents, which must stay byte for byte as they were.
func TestTenancyAttacks(t *testing.T) {
	r, _, db := tenanted(t)
	theirs := seedTenants(t, r)
	before, total := rawOf(t, db, globex), rawCount(t, db)
	require.Len(t, before, 2)
	mine := func(ms []*Account, err error) {
		t.Helper()
		require.NoError(t, err)
		for _, m := range ms {
			assert.Equal(t, acme, m.Tenant)
		}
	}

	t.Run("reads with injected filters", func(t *testing.T) {
		for name, f := range injected {
			ms, err := r.Find(asAcme, f)
			mine(ms, err)
			m, err := r.FindOne(asAcme, f)
			if err == nil {
				assert.Equal(t, acme, m.Tenant, name)
			}
			n, err := r.Count(asAcme, f)
			require.NoError(t, err, name)
			assert.LessOrEqual(t, n, int64(2), name)
			vals, err := r.Distinct(asAcme, "tenant", f)
			require.NoError(t, err, name)
			for _, v := range vals {
				assert.Equal(t, acme, v, name)
			}
			for m, err := range r.All(asAcme, f) {
				require.NoError(t, err)
				assert.Equal(t, acme, m.Tenant, name)
			}
		}
		_, err := r.FindByID(asAcme, theirs[0].ID)
		assert.ErrorIs(t, err, repo.ErrNotFound)
	})
	t.Run("a stolen model", func(t *testing.T) {
		stolen, err := r.FindByID(asAdmin, theirs[0].ID)
		require.NoError(t, err)
		stolen.Balance = 0
		assert.ErrorIs(t, r.Update(asAcme, stolen), tenancy.ErrTenantMismatch)
		assert.ErrorIs(t, r.Save(asAcme, stolen), tenancy.ErrTenantMismatch)
		assert.ErrorIs(t, r.Delete(asAcme, stolen), tenancy.ErrTenantMismatch)
		disguised := *stolen
		disguised.Tenant = acme
		assert.Error(t, r.Save(asAcme, &disguised), "the replace matches nothing, and its upsert hits globex's _id")
		assert.ErrorIs(t, r.Update(asAcme, &disguised), repo.ErrNotFound)
		require.NoError(t, r.Delete(asAcme, &disguised), "deletes nothing")
	})
	t.Run("updates and deletes by globex's _id", func(t *testing.T) {
		byID := bson.M{"_id": theirs[1].ID}
		res, err := r.UpdateOne(asAcme, byID, bson.M{"$set": bson.M{"balance": 0}})
		require.NoError(t, err)
		assert.Zero(t, res.MatchedCount)
		res, err = r.UpdateMany(asAcme, bson.M{"tenant": globex}, bson.M{"$inc": bson.M{"balance": -1}})
		require.NoError(t, err)
		assert.Zero(t, res.MatchedCount)
		_, err = r.FindOneAndUpdate(asAcme, byID, bson.M{"$set": bson.M{"balance": 0}})
		assert.ErrorIs(t, err, repo.ErrNotFound)
		_, err = r.FindOneAndDelete(asAcme, byID)
		assert.ErrorIs(t, err, repo.ErrNotFound)
		deleted, err := r.DeleteMany(asAcme, bson.M{"tenant": globex})
		require.NoError(t, err)
		assert.Zero(t, deleted.DeletedCount)
	})
	t.Run("moving one's own document to globex", func(t *testing.T) {
		a1, err := r.FindOne(asAcme, bson.M{"name": "a1"})
		require.NoError(t, err)
		for name, u := range map[string]any{
			"$set":         bson.M{"$set": bson.M{"tenant": globex}},
			"$unset":       bson.M{"$unset": bson.M{"tenant": ""}},
			"$rename from": bson.M{"$rename": bson.M{"tenant": "was"}},
			"$rename to":   bson.M{"$rename": bson.M{"name": "tenant"}},
			"$setOnInsert": bson.M{"$setOnInsert": bson.M{"tenant": globex}, "$inc": bson.M{"balance": 1}},
			"sub-path":     bson.M{"$set": bson.M{"tenant.x": 1}},
		} {
			_, err := r.UpdateOne(asAcme, bson.M{"_id": a1.ID}, u)
			assert.ErrorIs(t, err, tenancy.ErrTenantMismatch, name)
			_, err = r.UpdateMany(asAcme, bson.D{}, u)
			assert.ErrorIs(t, err, tenancy.ErrTenantMismatch, name)
			_, err = r.FindOneAndUpdate(asAcme, bson.M{"_id": a1.ID}, u)
			assert.ErrorIs(t, err, tenancy.ErrTenantMismatch, name)
		}
		a1.Tenant = globex
		assert.ErrorIs(t, r.Update(asAcme, a1), tenancy.ErrTenantMismatch)
		assert.ErrorIs(t, r.Save(asAcme, a1), tenancy.ErrTenantMismatch)
		_, err = r.UpdateOne(asAcme, bson.M{"_id": a1.ID}, bson.M{"$set": bson.M{"tenant": acme, "balance": 5}})
		require.NoError(t, err, "setting one's own tenant again is allowed")
	})
	t.Run("inserts and upserts naming globex", func(t *testing.T) {
		assert.ErrorIs(t, r.Insert(asAcme, &Account{Tenant: globex, Name: "x"}), tenancy.ErrTenantMismatch)
		err := r.InsertMany(asAcme, []*Account{{Name: "ok"}, {Tenant: globex, Name: "x"}})
		assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
		assert.Equal(t, total, rawCount(t, db), "no model of the batch was written")
		up := options.Update().SetUpsert(true)
		_, err = r.UpdateOne(asAcme, bson.M{"tenant": globex, "name": "new"}, bson.M{"$set": bson.M{"balance": 1}}, up)
		assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
		_, err = r.UpdateOne(asAcme, bson.M{"name": "new"}, bson.M{"$setOnInsert": bson.M{"tenant": globex}}, up)
		assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
		_, err = r.UpdateOne(asAcme, bson.M{"name": "new"}, bson.M{"$set": bson.M{"tenant": globex}}, up)
		assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
		_, err = r.FindOneAndUpdate(asAcme, bson.M{"tenant": globex}, bson.M{"$set": bson.M{"balance": 1}}, options.FindOneAndUpdate().SetUpsert(true))
		assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
	})
	t.Run("aggregates", func(t *testing.T) {
		var out []bson.M
		require.NoError(t, r.Aggregate(asAcme, mongo.Pipeline{{{Key: "$match", Value: bson.M{"tenant": globex}}}}, &out))
		assert.Empty(t, out)
		require.NoError(t, r.Aggregate(asAcme, mongo.Pipeline{{{Key: "$group", Value: bson.M{"_id": "$tenant", "n": bson.M{"$sum": 1}}}}}, &out))
		require.Len(t, out, 1)
		assert.Equal(t, acme, out[0]["_id"])
		for name, p := range map[string]mongo.Pipeline{
			"$facet": {{{Key: "$facet", Value: bson.M{"x": bson.A{bson.M{"$graphLookup": bson.M{}}}}}}},
			"$out":   {{{Key: "$out", Value: "stolen"}}},
			"$merge": {{{Key: "$merge", Value: bson.M{"into": "accounts"}}}},
		} {
			err := r.Aggregate(asAcme, p, &out)
			assert.ErrorIs(t, err, events.ErrUnguardedQuery, name)
		}
	})
	assert.Equal(t, before, rawOf(t, db, globex), "globex's documents are byte for byte unchanged")
	assert.Equal(t, total, rawCount(t, db))
}

// TestTenancyOutlastsOtherListeners: a BeforeQuery listener registered to
// run last cannot remove the tenant condition, and switching events off
// does not switch Tenancy off.
func TestTenancyOutlastsOtherListeners(t *testing.T) {
	r, bus, db := tenanted(t)
	seedTenants(t, r)
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Filter = bson.D{} // try to widen
		return nil
	}), events.On(events.BeforeQuery), events.Order(1<<40))
	n, err := r.Count(asAcme, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)

	quiet, err := repo.New[*Account](bus, repo.WithDatabase(db), repo.WithoutEvents())
	require.NoError(t, err)
	for name, c := range map[string]context.Context{"repo.WithoutEvents": asAcme, "events.WithoutEvents": events.WithoutEvents(asAcme)} {
		n, err := quiet.Count(c, bson.D{})
		require.NoError(t, err, name)
		assert.Equal(t, int64(2), n, name)
		_, err = quiet.Find(events.WithoutEvents(ctx), bson.D{})
		assert.ErrorIs(t, err, tenancy.ErrNoTenant, name)
	}
	require.NoError(t, quiet.Insert(events.WithoutEvents(asAcme), &Account{Name: "quiet"}))
	stamped, err := r.FindOne(asAcme, bson.M{"name": "quiet"})
	require.NoError(t, err)
	assert.Equal(t, acme, stamped.Tenant, "stamped with events off")
}

// TestTenancyFailsClosed: with no tenant in the context every operation is
// refused with ErrNoTenant and nothing is written.
func TestTenancyFailsClosed(t *testing.T) {
	r, _, db := tenanted(t)
	theirs := seedTenants(t, r)
	before, total := rawOf(t, db, globex), rawCount(t, db)
	m := theirs[0]
	var out []bson.M
	for name, op := range map[string]func(context.Context) error{
		"Insert":     func(c context.Context) error { return r.Insert(c, &Account{Name: "x"}) },
		"InsertMany": func(c context.Context) error { return r.InsertMany(c, []*Account{{Name: "x"}}) },
		"Save":       func(c context.Context) error { return r.Save(c, m) },
		"Update":     func(c context.Context) error { return r.Update(c, m) },
		"Delete":     func(c context.Context) error { return r.Delete(c, m) },
		"DeleteMany": func(c context.Context) error { _, err := r.DeleteMany(c, bson.D{}); return err },
		"UpdateOne": func(c context.Context) error {
			_, err := r.UpdateOne(c, bson.D{}, bson.M{"$set": bson.M{"balance": 0}}, options.Update().SetUpsert(true))
			return err
		},
		"UpdateMany": func(c context.Context) error {
			_, err := r.UpdateMany(c, bson.D{}, bson.M{"$set": bson.M{"balance": 0}})
			return err
		},
		"FindOneAndUpdate": func(c context.Context) error {
			_, err := r.FindOneAndUpdate(c, bson.D{}, bson.M{"$set": bson.M{"balance": 0}})
			return err
		},
		"FindOneAndDelete": func(c context.Context) error { _, err := r.FindOneAndDelete(c, bson.D{}); return err },
		"Find":             func(c context.Context) error { _, err := r.Find(c, bson.D{}); return err },
		"FindOne":          func(c context.Context) error { _, err := r.FindOne(c, bson.D{}); return err },
		"FindByID":         func(c context.Context) error { _, err := r.FindByID(c, m.ID); return err },
		"Count":            func(c context.Context) error { _, err := r.Count(c, bson.D{}); return err },
		"Distinct":         func(c context.Context) error { _, err := r.Distinct(c, "name", bson.D{}); return err },
		"Aggregate":        func(c context.Context) error { return r.Aggregate(c, nil, &out) },
		"empty tenant":     func(context.Context) error { _, err := r.Find(tenancy.WithTenant(ctx, ""), bson.D{}); return err },
	} {
		err := op(ctx)
		assert.ErrorIs(t, err, tenancy.ErrNoTenant, name)
		assert.ErrorIs(t, op(events.WithoutEvents(ctx)), tenancy.ErrNoTenant, name+" with events off")
	}
	assert.Equal(t, before, rawOf(t, db, globex))
	assert.Equal(t, total, rawCount(t, db))
	assert.ErrorIs(t, r.Insert(asAdmin, &Account{Name: "nobody's"}), tenancy.ErrNoTenant, "AllTenants does not invent a tenant")
	_, err := r.UpdateOne(asAdmin, bson.M{"name": "nobody's"}, bson.M{"$set": bson.M{"balance": 1}}, options.Update().SetUpsert(true))
	assert.ErrorIs(t, err, tenancy.ErrNoTenant)
	assert.Equal(t, total, rawCount(t, db))
}

// TestTenancyPositive: a tenant's own operations work; numbering restarts
// at 1 for each tenant; an upsert stamps the tenant and gets its number;
// AllTenants sees everything; a custom resolver works.
func TestTenancyPositive(t *testing.T) {
	r, _, db := tenanted(t)
	seedTenants(t, r)
	mine, err := r.Find(asAcme, bson.D{}, options.Find().SetSort(bson.M{"no": 1}))
	require.NoError(t, err)
	require.Len(t, mine, 2)
	assert.Equal(t, []int64{1, 2}, []int64{mine[0].No, mine[1].No})
	theirs, err := r.Find(asGlobex, bson.D{}, options.Find().SetSort(bson.M{"no": 1}))
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2}, []int64{theirs[0].No, theirs[1].No}, "each tenant numbers from 1")

	res, err := r.UpdateOne(asAcme, bson.M{"name": "upserted"}, bson.M{"$inc": bson.M{"balance": 3}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	raw, err := db.Collection("accounts").FindOne(ctx, bson.M{"_id": res.UpsertedID}).Raw()
	require.NoError(t, err)
	assert.Equal(t, acme, raw.Lookup("tenant").StringValue())
	assert.Equal(t, int64(3), raw.Lookup("no").Int64())

	a1 := mine[0]
	a1.Balance = 100
	require.NoError(t, r.Update(asAcme, a1))
	require.NoError(t, r.Save(asAcme, a1))
	built := &Account{Name: "built"}
	require.NoError(t, r.Insert(asAcme, built))
	assert.Equal(t, acme, built.Tenant, "stamped")
	require.NoError(t, r.Delete(asAcme, built))
	all, err := r.Count(asAdmin, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(5), all)

	idx, err := db.Collection("accounts").Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	var compound bool
	for _, s := range idx {
		compound = compound || (s.Unique != nil && *s.Unique && s.KeysDocument.String() == `{"tenant": {"$numberInt":"1"},"no": {"$numberInt":"1"}}`)
	}
	assert.True(t, compound, "a unique index on (tenant, no)")

	type claimsKey struct{}
	custom := tenancy.New(tenancy.WithResolver(func(c context.Context) (string, error) {
		s, _ := c.Value(claimsKey{}).(string)
		return s, nil
	}))
	bus := events.NewBus()
	bus.Register(custom)
	viaClaims, err := repo.New[*Account](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	n, err := viaClaims.Count(context.WithValue(ctx, claimsKey{}, globex), bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	_, err = viaClaims.Count(asGlobex, bson.D{})
	assert.ErrorIs(t, err, tenancy.ErrNoTenant, "the resolver replaces WithTenant")
}

// TestTenancyRandomFilters: random filters over the tenant and other
// fields never return another tenant's document.
func TestTenancyRandomFilters(t *testing.T) {
	r, _, _ := tenanted(t)
	seedTenants(t, r)
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) bson.D
	leaf := func() bson.D {
		switch rng.IntN(5) {
		case 0:
			return bson.D{{Key: "tenant", Value: []string{acme, globex}[rng.IntN(2)]}}
		case 1:
			return bson.D{{Key: "tenant", Value: bson.M{"$in": bson.A{globex, acme}[:1+rng.IntN(2)]}}}
		case 2:
			return bson.D{{Key: "tenant", Value: bson.M{"$ne": []string{acme, globex}[rng.IntN(2)]}}}
		case 3:
			return bson.D{{Key: "name", Value: fmt.Sprintf("%c%d", "ab"[rng.IntN(2)], 1+rng.IntN(2))}}
		}
		return bson.D{{Key: "balance", Value: bson.M{"$gte": rng.IntN(25)}}}
	}
	gen = func(depth int) bson.D {
		if depth > 2 || rng.IntN(3) == 0 {
			return leaf()
		}
		op := []string{"$or", "$and", "$nor"}[rng.IntN(3)]
		var arr bson.A
		for range 1 + rng.IntN(3) {
			arr = append(arr, gen(depth+1))
		}
		return bson.D{{Key: op, Value: arr}}
	}
	for i := range 150 {
		f := gen(0)
		ms, err := r.Find(asAcme, f)
		require.NoError(t, err, "%v", f)
		for _, m := range ms {
			require.Equal(t, acme, m.Tenant, "filter %d %v returned another tenant's document", i, f)
		}
	}
}

// TestTenancyConcurrentNumbering: two tenants insert from several
// goroutines at once; each tenant's count is exact and its numbers are
// 1..n, distinct.
func TestTenancyConcurrentNumbering(t *testing.T) {
	r, _, _ := tenanted(t)
	const workers, each = 4, 25
	var wg sync.WaitGroup
	for _, tenant := range []string{acme, globex} {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := tenancy.WithTenant(ctx, tenant)
				for i := range each {
					if i%5 == 0 {
						assert.NoError(t, r.InsertMany(c, []*Account{{Name: "m"}, {Name: "m"}}))
						continue
					}
					assert.NoError(t, r.Insert(c, &Account{Name: "one"}))
				}
			}()
		}
	}
	wg.Wait()
	want := workers * (each + each/5)
	for _, tenant := range []string{acme, globex} {
		ms, err := r.Find(tenancy.WithTenant(ctx, tenant), bson.D{})
		require.NoError(t, err)
		require.Len(t, ms, want, tenant)
		nos := make([]int64, len(ms))
		for i, m := range ms {
			nos[i] = m.No
		}
		slices.Sort(nos)
		for i, n := range nos {
			require.Equal(t, int64(i+1), n, "%s's numbers are 1..%d", tenant, want)
		}
	}
}

type badTenant struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           int `bson:"tenant" policy:"tenant"`
}

type twoTenants struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant"`
	Org              string `bson:"org" policy:"tenant"`
}

type tenantOption struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant,id"`
}

type tenantID struct {
	ID string `bson:"_id" policy:"tenant"`
}

func (m *tenantID) PrepareID(id any) (any, error) { return id, nil }
func (m *tenantID) GetID() any                    { return m.ID }
func (m *tenantID) SetID(id any)                  { m.ID, _ = id.(string) }

type tenantAudited struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant" audit:"createdBy"`
}

type scopedWithoutTenant struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64 `bson:"no" auto:"inc,scope=tenant"`
}

// TestTenantTagsAreValidated: Tenancy refuses, when the repository is
// created, a tenant field it cannot govern, naming the type, the field,
// its tag and the reason.
func TestTenantTagsAreValidated(t *testing.T) {
	bus := events.NewBus()
	bus.Register(tenancy.New())
	db := srv.PooledDatabase(t)
	for _, tc := range []struct {
		new  func() error
		want string
	}{
		{func() error { _, err := repo.New[*badTenant](bus, repo.WithDatabase(db)); return err }, "badTenant field Tenant `policy:\"tenant\"`: the tenant field must be a string, not int"},
		{func() error { _, err := repo.New[*twoTenants](bus, repo.WithDatabase(db)); return err }, "field Org `policy:\"tenant\"`: a second tenant field (the first is Tenant)"},
		{func() error { _, err := repo.New[*tenantOption](bus, repo.WithDatabase(db)); return err }, `unknown option "id"`},
		{func() error { _, err := repo.New[*tenantID](bus, repo.WithDatabase(db)); return err }, "the tenant cannot be the _id"},
		{func() error { _, err := repo.New[*tenantAudited](bus, repo.WithDatabase(db)); return err }, "cannot also be an auto or audit field"},
	} {
		err := tc.new()
		assert.ErrorIs(t, err, model.ErrInvalidTag)
		assert.ErrorContains(t, err, tc.want)
	}
	_, err := repo.New[*scopedWithoutTenant](bus, repo.WithDatabase(db))
	assert.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, `scope=tenant: the model has no field stored as "tenant"`)
}
