package policytest_test

// Attacks on the Tenancy and SoftDelete policies. Each TestDefend* test
// asserts that the policy withstands one attack; TestHeld* tests are
// attacks that the design withstands without a dedicated defence.

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// VAccount is a tenant's versioned document.
type VAccount struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant"`
	V                int64  `bson:"v" auto:"version"`
	Name             string `bson:"name"`
}

// TNote is a tenant's soft-deleted document.
type TNote struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Text             string     `bson:"text"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// A policy ordered after Tenancy that drops the tenant condition is caught
// by Tenancy's Check: the operation fails closed.
func TestDefendPolicyAfterTenancyDropsTenant(t *testing.T) {
	r, bus, _ := tenanted(t)
	seedTenants(t, r)
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Filter = bson.D{} // "normalise" the filter
		return nil
	}), events.On(events.BeforeQuery), events.AsPolicy(), events.Order(1))
	_, err := r.Count(asAcme, bson.D{})
	assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
	_, err = r.Find(asAcme, bson.M{"tenant": globex})
	assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
}

// A policy ordered after SoftDelete that clears the soft delete's update is
// caught by SoftDelete's Check: nothing is deleted.
func TestDefendPolicyAfterSoftDeleteHardDeletes(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(softdelete.New())
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Update = nil // turn the soft delete back into a delete
		return nil
	}), events.On(events.BeforeDelete), events.AsPolicy(), events.Order(1))
	r, err := repo.New[*Note](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, r.InsertMany(ctx, []*Note{{Text: "n1"}, {Text: "n2"}}))
	_, err = r.DeleteMany(ctx, bson.D{})
	assert.ErrorIs(t, err, events.ErrUnguardedQuery)
	n, err := db.Collection("notes").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "nothing was deleted")
}

// A BeforeSave listener that rewrites the document's tenant is caught.
func TestDefendBeforeSaveListenerRewritesTenant(t *testing.T) {
	r, bus, db := tenanted(t)
	seedTenants(t, r)
	mine := &Account{Name: "a3"}
	require.NoError(t, r.Insert(asAcme, mine))
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		var d bson.D
		if err := bson.Unmarshal(e.Document, &d); err != nil {
			return err
		}
		for i := range d {
			if d[i].Key == "tenant" {
				d[i].Value = globex
			}
		}
		raw, err := bson.Marshal(d)
		e.Document = raw
		return err
	}), events.On(events.BeforeSave))
	before := rawOf(t, db, globex)
	assert.ErrorIs(t, r.Insert(asAcme, &Account{Name: "planted"}), tenancy.ErrTenantMismatch)
	assert.ErrorIs(t, r.Save(asAcme, mine), tenancy.ErrTenantMismatch)
	assert.Equal(t, before, rawOf(t, db, globex))
	_, err := r.FindByID(asAcme, mine.ID)
	assert.NoError(t, err, "a3 is still acme's")
}

// A BeforeDelete listener's update that moves the tenant is caught.
func TestDefendBeforeDeleteUpdateMovesTenant(t *testing.T) {
	r, bus, db := tenanted(t)
	seedTenants(t, r)
	require.NoError(t, r.Insert(asAcme, &Account{Name: "a3"}))
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Update = bson.D{{Key: "$set", Value: bson.D{{Key: "tenant", Value: globex}}}}
		return nil
	}), events.On(events.BeforeDelete))
	_, err := r.DeleteMany(softdelete.HardDelete(asAcme), bson.M{"name": "a3"})
	assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
	assert.Len(t, rawOf(t, db, globex), 2)
}

// A listener that replaces Event.Model (so that policies judge a decoy)
// is refused by the repository.
func TestDefendModelSwapDecoy(t *testing.T) {
	r, bus, db := tenanted(t)
	seedTenants(t, r)
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if a, ok := e.Model.(*Account); ok {
			cp := *a
			cp.Tenant = ""
			e.Model = &cp
		}
		return nil
	}), events.On(events.BeforeConvert, events.BeforeQuery), events.Order(-1))
	before := rawOf(t, db, globex)
	err := r.Insert(asAcme, &Account{Tenant: globex, Name: "planted", No: 99})
	assert.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "replaced Event.Model")
	assert.Equal(t, before, rawOf(t, db, globex))
}

// PatchDTO is a request body decoded from JSON, used as a $set value.
type PatchDTO struct {
	Org  string `json:"tenant,omitempty"`
	Name string `json:"name,omitempty"`
}

// lookupStage is a stage whose registry encoding names $unionWith.
type lookupStage struct {
	L string `json:"$unionWith"`
}

// With a repository registry of its own (one that falls back to json tags),
// policies judge the bytes that registry sends, not another reading.
func TestDefendRegistryDifferential(t *testing.T) {
	var sent []string
	db := srv.Database(t, options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "aggregate" {
			sent = append(sent, e.Command.Lookup("pipeline").String())
		}
	}}))
	// A registry that writes PatchDTO by its json names, as a registry with
	// JSON struct tags would: its Org field goes out as "tenant".
	reg := bson.NewRegistry()
	require.NoError(t, model.RegisterStrict(reg)) // repo.New refuses it otherwise
	reg.RegisterTypeEncoder(reflect.TypeFor[PatchDTO](), bsoncodec.ValueEncoderFunc(
		func(_ bsoncodec.EncodeContext, vw bsonrw.ValueWriter, v reflect.Value) error {
			p := v.Interface().(PatchDTO)
			dw, err := vw.WriteDocument()
			if err != nil {
				return err
			}
			for _, kv := range [][2]string{{"tenant", p.Org}, {"name", p.Name}} {
				if kv[1] == "" {
					continue
				}
				ew, err := dw.WriteDocumentElement(kv[0])
				if err == nil {
					err = ew.WriteString(kv[1])
				}
				if err != nil {
					return err
				}
			}
			return dw.WriteDocumentEnd()
		}))
	reg.RegisterTypeEncoder(reflect.TypeFor[lookupStage](), bsoncodec.ValueEncoderFunc(
		func(_ bsoncodec.EncodeContext, vw bsonrw.ValueWriter, v reflect.Value) error {
			dw, err := vw.WriteDocument()
			if err != nil {
				return err
			}
			ew, err := dw.WriteDocumentElement("$unionWith")
			if err == nil {
				err = ew.WriteString(v.Interface().(lookupStage).L)
			}
			if err != nil {
				return err
			}
			return dw.WriteDocumentEnd()
		}))
	bus := events.NewBus()
	bus.Register(tenancy.New())
	r, err := repo.New[*Account](bus, repo.WithDatabase(db), repo.WithRegistry(reg))
	require.NoError(t, err)
	mine := &Account{Name: "mine", No: 1} // no AutoKeys on this bus
	require.NoError(t, r.Insert(asAcme, mine))
	_, err = r.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": PatchDTO{Org: globex}})
	assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
	assert.Empty(t, rawOf(t, db, globex))
	var out []bson.M
	err = r.Aggregate(asAcme, mongo.Pipeline{{{Key: "$facet", Value: bson.M{"x": bson.A{lookupStage{"accounts"}}}}}}, &out)
	assert.NotErrorIs(t, err, events.ErrUnguardedQuery, "the stage the registry writes is judged, and confined")
	require.Len(t, sent, 1)
	assert.Contains(t, sent[0], `{"$unionWith": {"coll": "accounts","pipeline": [{"$match": {"tenant": "acme"}}]}}`)
}

// A request with no tenant, or the wrong one, cannot use up a tenant's
// numbers: AutoKeys refuses before reserving.
func TestDefendNumbersOfAnotherTenant(t *testing.T) {
	r, _, _ := tenanted(t)
	seedTenants(t, r) // globex has 1, 2
	batch := make([]*Account, 500)
	for i := range batch {
		batch[i] = &Account{Tenant: globex, Name: "burn"}
	}
	require.ErrorIs(t, r.InsertMany(ctx, batch), tenancy.ErrNoTenant)
	require.ErrorIs(t, r.InsertMany(asAcme, batch), tenancy.ErrTenantMismatch)
	require.ErrorIs(t, r.Insert(events.WithoutEvents(ctx), &Account{Tenant: globex, Name: "burn"}), tenancy.ErrNoTenant)
	next := &Account{Name: "next"}
	require.NoError(t, r.Insert(asGlobex, next))
	assert.Equal(t, int64(3), next.No, "globex's numbers are intact")
}

// An AutoKeys that was not given the tenancy policy fails closed, and
// says how to fix it.
func TestDefendResolverWithoutScopeSource(t *testing.T) {
	db := srv.Database(t)
	type claimsKey struct{}
	ten := tenancy.New(tenancy.WithResolver(func(c context.Context) (string, error) {
		s, _ := c.Value(claimsKey{}).(string)
		return s, nil
	}))
	keys, err := autokeys.New(db) // forgot WithScopeSource(ten)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(ten)
	_, err = repo.New[*Account](bus, repo.WithDatabase(db))
	assert.ErrorContains(t, err, "WithScopeSource", "refused when the repository is made, before any number is taken")
}

// The version check's own query is confined like any other, so a versioned
// Update cannot tell another tenant's _id from a missing one.
func TestDefendExistenceOracleVersioned(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(tenancy.New())
	r, err := repo.New[*VAccount](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	theirs := &VAccount{Name: "secret"}
	require.NoError(t, r.Insert(asGlobex, theirs))
	probe := func(id primitive.ObjectID) error {
		m := &VAccount{Name: "probe", V: 1}
		m.ID = id
		return r.Update(asAcme, m)
	}
	assert.ErrorIs(t, probe(theirs.ID), repo.ErrNotFound, "the same answer as for a missing _id")
	assert.ErrorIs(t, probe(primitive.NewObjectID()), repo.ErrNotFound)
}

// The helper called last decides: WithTenant narrows an AllTenants context.
func TestDefendAllTenantsNarrowed(t *testing.T) {
	r, _, _ := tenanted(t)
	seedTenants(t, r)
	perTenant := tenancy.WithTenant(tenancy.AllTenants(ctx), acme)
	n, err := r.Count(perTenant, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	n, err = r.Count(tenancy.AllTenants(perTenant), bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)
}

// Stages hidden in value shapes a field-by-field scan would miss are found
// in the BSON the driver sends.
func TestDefendHiddenStagesInFacet(t *testing.T) {
	r, _, _ := tenanted(t)
	union := bson.D{{Key: "$unionWith", Value: "accounts"}}
	coreDoc, err := bson.Marshal(union)
	require.NoError(t, err)
	arr := bson.A{union}
	for name, hidden := range map[string]any{
		"[]bson.E":          bson.A{[]bson.E(union)},
		"bsoncore.Document": bson.A{bsoncore.Document(coreDoc)},
		"*bson.A":           &arr,
		"*[]bson.D":         &[]bson.D{union},
	} {
		p := mongo.Pipeline{{{Key: "$facet", Value: bson.D{{Key: "all", Value: hidden}}}}}
		var out []bson.M
		assert.ErrorIs(t, r.Aggregate(asAcme, p, &out), events.ErrUnguardedQuery, name)
	}
}

// SoftDelete refuses stages that read another collection, where it cannot
// skip marked documents, unless WithDeleted.
func TestDefendSoftDeleteUnionWith(t *testing.T) {
	r, _ := softDeleted[*Note](t)
	var out []bson.M
	p := mongo.Pipeline{{{Key: "$unionWith", Value: "notes"}}}
	err := r.Aggregate(softdelete.WithDeleted(ctx), p, &out)
	assert.NotErrorIs(t, err, events.ErrUnguardedQuery, "allowed under WithDeleted (FerretDB itself lacks $unionWith); reach_test.go shows what is sent")
}

// An update pipeline with a $project (which may drop the tenant field) is
// refused before it is sent.
func TestDefendPipelineProjectDropsTenant(t *testing.T) {
	r, _, db := tenanted(t)
	seedTenants(t, r)
	before := rawOf(t, db, acme)
	pipe := []bson.D{{{Key: "$project", Value: bson.D{{Key: "name", Value: 1}}}}}
	_, err := r.UpdateMany(asAcme, bson.D{}, pipe)
	assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
	_, err = r.UpdateOne(asAcme, bson.M{"name": "new"}, pipe, options.Update().SetUpsert(true))
	assert.ErrorIs(t, err, tenancy.ErrTenantMismatch)
	assert.Equal(t, before, rawOf(t, db, acme))
}

// A collation could make "acme" match "ACME": refused for tenant models.
func TestDefendCollation(t *testing.T) {
	r, _, _ := tenanted(t)
	seedTenants(t, r)
	ci := &options.Collation{Locale: "en", Strength: 2}
	_, err := r.Find(asAcme, bson.D{}, options.Find().SetCollation(ci))
	assert.ErrorIs(t, err, events.ErrUnguardedQuery)
	_, err = r.Count(asAcme, bson.D{}, options.Count().SetCollation(ci))
	assert.ErrorIs(t, err, events.ErrUnguardedQuery)
	_, err = r.UpdateMany(asAcme, bson.D{}, bson.M{"$set": bson.M{"balance": 0}}, options.Update().SetCollation(ci))
	assert.ErrorIs(t, err, events.ErrUnguardedQuery)
	_, err = r.Find(asAcme, bson.D{}, options.Find().SetCollation(&options.Collation{Locale: "simple"}))
	assert.NotErrorIs(t, err, events.ErrUnguardedQuery, "the simple collation is byte equality (FerretDB has no collations at all)")
}

// A delete under WithDeleted marks live documents only: an earlier mark
// and its time are kept.
func TestDefendWithDeletedKeepsMarks(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	clock := deletedAt
	bus.Register(softdelete.New(softdelete.WithClock(func() time.Time { return clock })))
	r, err := repo.New[*Note](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	n1 := &Note{Text: "n1"}
	require.NoError(t, r.Insert(ctx, n1))
	require.NoError(t, r.Delete(ctx, n1))
	clock = clock.Add(24 * time.Hour)
	res, err := r.DeleteMany(softdelete.WithDeleted(ctx), bson.D{})
	require.NoError(t, err)
	assert.Zero(t, res.DeletedCount)
	res, err = r.DeleteOne(softdelete.WithDeleted(ctx), bson.M{"_id": n1.ID})
	require.NoError(t, err)
	assert.Zero(t, res.DeletedCount, "DeleteOne too")
	m, err := r.FindByID(softdelete.WithDeleted(ctx), n1.ID)
	require.NoError(t, err)
	assert.Equal(t, deletedAt, m.DeletedAt.UTC(), "the original deletion time stays")
}

func TestHeldTenancyShapes(t *testing.T) {
	r, _, db := tenanted(t)
	theirs := seedTenants(t, r)
	before, total := rawOf(t, db, globex), rawCount(t, db)
	dupTenant := bson.D{{Key: "tenant", Value: globex}, {Key: "tenant", Value: globex}}
	dupAnd := bson.D{{Key: "$and", Value: bson.A{bson.M{"tenant": acme}}}, {Key: "$and", Value: bson.A{bson.M{"tenant": globex}}}}
	rawF, _ := bson.Marshal(bson.M{"tenant": globex})
	filters := map[string]any{
		"dup tenant keys": dupTenant,
		"dup $and keys":   dupAnd,
		"bson.Raw":        bson.Raw(rawF),
		"$where":          bson.M{"$where": "true"},
		"$comment":        bson.M{"$comment": "x"},
		"$expr":           bson.M{"$expr": bson.M{"$ne": bson.A{"$tenant", acme}}},
		"dotted":          bson.M{"tenant.x": bson.M{"$exists": false}},
		"map[string]any":  map[string]any{"$or": []any{map[string]any{"tenant": globex}}},
		"[]bson.E":        []bson.E{{Key: "tenant", Value: globex}},
		"empty raw":       bson.Raw{},
	}
	for name, f := range filters {
		ms, err := r.Find(asAcme, f)
		if err == nil {
			for _, m := range ms {
				assert.Equal(t, acme, m.Tenant, name)
			}
		}
		n, err := r.Count(asAcme, f)
		if err == nil { // upserts below add acme documents: compare with acme's own
			assert.LessOrEqual(t, n, int64(len(rawOf(t, db, acme))), name)
		}
		_, _ = r.UpdateMany(asAcme, f, bson.M{"$set": bson.M{"balance": -1}})
		_, _ = r.DeleteMany(asAcme, f)
		_, _ = r.UpdateOne(asAcme, f, bson.M{"$set": bson.M{"balance": -2}}, options.Update().SetUpsert(true))
	}
	up := options.Update().SetUpsert(true)
	updates := map[string]any{
		"dup $set":         bson.D{{Key: "$set", Value: bson.M{"tenant": acme}}, {Key: "$set", Value: bson.M{"tenant": globex}}},
		"dup keys in $set": bson.D{{Key: "$set", Value: bson.D{{Key: "tenant", Value: acme}, {Key: "tenant", Value: globex}}}},
		"$currentDate":     bson.M{"$currentDate": bson.M{"tenant": true}},
		"$min":             bson.M{"$min": bson.M{"tenant": "a"}},
		"$max":             bson.M{"$max": bson.M{"tenant": "z"}},
		"$push":            bson.M{"$push": bson.M{"tenant": "x"}},
		"$addToSet":        bson.M{"$addToSet": bson.M{"tenant": "x"}},
		"$pull":            bson.M{"$pull": bson.M{"tenant": "x"}},
		"$mul":             bson.M{"$mul": bson.M{"tenant": 1}},
		"$bit":             bson.M{"$bit": bson.M{"tenant": bson.M{"and": 1}}},
		"positional":       bson.M{"$set": bson.M{"tenant.$": "x"}},
		"all positional":   bson.M{"$set": bson.M{"tenant.$[]": "x"}},
		"$rename to sub":   bson.M{"$rename": bson.M{"name": "tenant.x"}},
		"struct $set": bson.M{"$set": struct {
			T string `bson:"tenant"`
		}{globex}},
		"raw $set":              bson.M{"$set": bson.Raw(rawF)},
		"[]bson.E $set":         bson.M{"$set": []bson.E{{Key: "tenant", Value: globex}}},
		"pipeline $set":         []bson.D{{{Key: "$set", Value: bson.M{"tenant": globex}}}},
		"pipeline $unset":       []bson.D{{{Key: "$unset", Value: "tenant"}}},
		"pipeline $replaceWith": []bson.D{{{Key: "$replaceWith", Value: bson.M{"tenant": globex}}}},
		"[]bson.E update":       []bson.E{{Key: "$set", Value: bson.M{"tenant": globex}}},
		"symbol":                bson.M{"$set": bson.M{"tenant": primitive.Symbol(acme)}},
	}
	for name, u := range updates {
		_, err := r.UpdateMany(asAcme, bson.D{}, u)
		assert.Error(t, err, name)
		_, err = r.UpdateOne(asAcme, bson.M{"name": "nope"}, u, up)
		assert.Error(t, err, name)
	}
	for name, f := range map[string]any{
		"$in single": bson.M{"tenant": bson.M{"$in": bson.A{globex}}},
		"$or single": bson.M{"$or": bson.A{bson.M{"tenant": globex}}},
		"$eq":        bson.M{"tenant": bson.M{"$eq": globex}},
		"$and deep":  bson.M{"$and": bson.A{bson.M{"$and": bson.A{bson.M{"tenant": globex}}}}},
	} {
		res, err := r.UpdateOne(asAcme, f, bson.M{"$set": bson.M{"name": "up-" + name}}, up)
		if err == nil && res.UpsertedID != nil {
			raw, err := db.Collection("accounts").FindOne(ctx, bson.M{"_id": res.UpsertedID}).Raw()
			require.NoError(t, err)
			assert.Equal(t, acme, raw.Lookup("tenant").StringValue(), name)
		}
	}
	// Aggregates
	for name, p := range map[string]any{
		"$documents":        mongo.Pipeline{{{Key: "$documents", Value: bson.A{bson.M{"tenant": globex}}}}},
		"$lookup in $facet": mongo.Pipeline{{{Key: "$facet", Value: bson.M{"x": bson.A{bson.M{"$lookup": bson.M{"from": "accounts", "pipeline": bson.A{}, "as": "j"}}}}}}},
		"$unionWith bson.M": []bson.M{{"$unionWith": bson.M{"coll": "accounts"}}},
		"$collStats":        mongo.Pipeline{{{Key: "$collStats", Value: bson.M{"count": bson.M{}}}}},
		"$geoNear":          mongo.Pipeline{{{Key: "$geoNear", Value: bson.M{"near": bson.A{0, 0}, "distanceField": "d", "query": bson.M{"tenant": globex}}}}},
	} {
		var out []bson.M
		err := r.Aggregate(asAcme, p, &out)
		for _, o := range out {
			assert.NotEqual(t, globex, o["tenant"], name)
		}
		t.Logf("%s: %v", name, err)
	}
	_, err := r.FindByID(asAcme, theirs[0].ID.Hex())
	assert.ErrorIs(t, err, repo.ErrNotFound)
	assert.Equal(t, before, rawOf(t, db, globex), "globex unchanged")
	_ = total
	_ = fmt.Sprint
}

func TestHeldSoftDeleteShapes(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(tenancy.New())
	bus.Register(softdelete.New())
	r, err := repo.New[*TNote](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	gone := &TNote{Text: "gone"}
	require.NoError(t, r.Insert(asAcme, gone))
	require.NoError(t, r.Insert(asAcme, &TNote{Text: "live"}))
	require.NoError(t, r.Delete(asAcme, gone))
	for name, f := range map[string]any{
		"$or deletedAt": bson.M{"$or": bson.A{bson.M{"deletedAt": bson.M{"$ne": nil}}, bson.M{"text": "live"}}},
		"deletedAt set": bson.M{"deletedAt": bson.M{"$exists": true}},
		"$nor":          bson.M{"$nor": bson.A{bson.M{"deletedAt": nil}}},
		"_id":           bson.M{"_id": gone.ID},
		"dup deletedAt": bson.D{{Key: "deletedAt", Value: nil}, {Key: "deletedAt", Value: bson.M{"$ne": nil}}},
	} {
		ms, err := r.Find(asAcme, f)
		require.NoError(t, err, name)
		for _, m := range ms {
			assert.Nil(t, m.DeletedAt, name)
		}
		_, err = r.UpdateMany(asAcme, f, bson.M{"$unset": bson.M{"deletedAt": ""}})
		require.NoError(t, err, name)
		_, err = r.FindByID(asAcme, gone.ID)
		require.ErrorIs(t, err, repo.ErrNotFound, name)
		var out []bson.M
		require.NoError(t, r.Aggregate(asAcme, mongo.Pipeline{{{Key: "$match", Value: f}}}, &out), name)
		for _, o := range out {
			assert.Nil(t, o["deletedAt"], name)
		}
	}
	vals, err := r.Distinct(asAcme, "text", bson.D{})
	require.NoError(t, err)
	assert.Equal(t, []any{"live"}, vals)
	_, err = r.FindOneAndUpdate(asAcme, bson.M{"_id": gone.ID}, bson.M{"$unset": bson.M{"deletedAt": ""}})
	assert.ErrorIs(t, err, repo.ErrNotFound)
	res, err := r.DeleteMany(softdelete.HardDelete(asAcme), bson.M{"_id": gone.ID})
	require.NoError(t, err)
	assert.Zero(t, res.DeletedCount, "HardDelete without WithDeleted does not purge marked")
	res, err = r.DeleteMany(events.WithoutEvents(asAcme), bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.DeletedCount, "the live document is marked")
	c, err := db.Collection(r.Collection().Name()).CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), c, "WithoutEvents still soft-deletes")
}

// ---------------------------------------------------------------------
// F11 (low): under WithDeleted, a delete re-marks documents already marked,
// overwriting their original deletedAt (and deletedBy).
