package policytest_test

// A policy governs a collection, whatever model or stage reaches it: the
// stages of any model's pipeline that read a governed collection are
// confined by its policies, those that write one are refused, and a stage
// that reaches a collection no repository of the bus serves is refused.
// FerretDB lacks these stages, so the tests judge what the driver sends.

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Product is a model no policy governs.
type Product struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

// Secret is a model with an encrypted, searchable field.
type Secret struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,eq"`
}

// reachFixture has repositories of a plain, a tenant, a soft-deleted and
// an encrypted collection on one bus with the three policies, over a
// client whose aggregate commands it records.
type reachFixture struct {
	products *repo.Repository[*Product]
	notes    *repo.Repository[*Note]
	mu       sync.Mutex
	sent     []bson.Raw
}

func newReachFixture(t *testing.T) *reachFixture {
	t.Helper()
	f := &reachFixture{}
	mon := options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "aggregate" {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.sent = append(f.sent, append(bson.Raw(nil), e.Command...))
		}
	}})
	db := srv.Database(t, mon)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret}})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(tenancy.New())
	bus.Register(softdelete.New())
	bus.Register(enc)
	f.products, err = repo.New[*Product](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = repo.New[*Account](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	f.notes, err = repo.New[*Note](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = repo.New[*Secret](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return f
}

// run aggregates p over products under ctx and returns the pipeline sent,
// or nil when nothing was sent, and the error.
func (f *reachFixture) run(ctx context.Context, p any) (bson.Raw, error) {
	f.mu.Lock()
	f.sent = nil
	f.mu.Unlock()
	var out []bson.M
	err := f.products.Aggregate(ctx, p, &out)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) == 0 {
		return nil, err
	}
	return f.sent[0].Lookup("pipeline").Array(), err
}

func TestReachingStagesOfAnUngovernedModel(t *testing.T) {
	f := newReachFixture(t)
	tenantMatch := `{"$match": {"tenant": "acme"}}`
	liveMatch := `{"$match": {"deletedAt": null}}`
	cases := []struct {
		name    string
		ctx     context.Context
		stage   bson.D
		refused error    // nil: sent
		holds   []string // in the pipeline sent, as relaxed extended JSON
	}{
		{"unionWith a tenant collection, no tenant", ctx, bson.D{{Key: "$unionWith", Value: "accounts"}}, tenancy.ErrNoTenant, nil},
		{"unionWith a tenant collection", asAcme, bson.D{{Key: "$unionWith", Value: "accounts"}}, nil,
			[]string{`{"$unionWith": {"coll": "accounts","pipeline": [` + tenantMatch}},
		{"unionWith under AllTenants", tenancy.AllTenants(ctx), bson.D{{Key: "$unionWith", Value: "accounts"}}, nil,
			[]string{`{"$unionWith": {"coll": "accounts"}}`}},
		{"lookup by fields from a tenant collection", asAcme, bson.D{{Key: "$lookup", Value: bson.M{"from": "accounts", "localField": "name", "foreignField": "name", "as": "a"}}}, nil,
			[]string{`"from": "accounts"`, `"pipeline": [` + tenantMatch}},
		{"lookup from a soft-deleted collection", ctx, bson.D{{Key: "$lookup", Value: bson.M{"from": "notes", "pipeline": bson.A{}, "as": "n"}}}, nil,
			[]string{`"pipeline": [` + liveMatch}},
		{"lookup from a soft-deleted collection WithDeleted", softdelete.WithDeleted(ctx), bson.D{{Key: "$lookup", Value: bson.M{"from": "notes", "pipeline": bson.A{}, "as": "n"}}}, nil,
			[]string{`"pipeline": []`}},
		{"graphLookup in a tenant collection", asAcme, bson.D{{Key: "$graphLookup", Value: bson.M{"from": "accounts", "startWith": "$name", "connectFromField": "name", "connectToField": "name", "as": "g"}}}, nil,
			[]string{`"restrictSearchWithMatch": {"tenant": "acme"}`}},
		{"lookup nested in facet and a sub-pipeline", asAcme, bson.D{{Key: "$facet", Value: bson.M{"x": bson.A{bson.M{"$lookup": bson.M{"from": "products", "as": "p",
			"pipeline": bson.A{bson.M{"$unionWith": "accounts"}}}}}}}}, nil,
			[]string{`{"$unionWith": {"coll": "accounts","pipeline": [` + tenantMatch}},
		{"merge into a tenant collection", tenancy.AllTenants(ctx), bson.D{{Key: "$merge", Value: bson.M{"into": "accounts"}}}, events.ErrUnguardedQuery, nil},
		{"out into a tenant collection", asAcme, bson.D{{Key: "$out", Value: "accounts"}}, events.ErrUnguardedQuery, nil},
		{"out into a soft-deleted collection", ctx, bson.D{{Key: "$out", Value: "notes"}}, events.ErrUnguardedQuery, nil},
		{"merge into an encrypted collection by name", ctx, bson.D{{Key: "$merge", Value: "secrets"}}, encryption.ErrEncryptedField, nil},
		{"lookup matching plaintext of an encrypted field", ctx, bson.D{{Key: "$lookup", Value: bson.M{"from": "secrets", "as": "s",
			"pipeline": bson.A{bson.M{"$match": bson.M{"email": "ann@example.com"}}}}}}, encryption.ErrEncryptedField, nil},
		{"lookup joining on an encrypted field", ctx, bson.D{{Key: "$lookup", Value: bson.M{"from": "secrets", "localField": "name", "foreignField": "email", "as": "s"}}}, encryption.ErrEncryptedField, nil},
		{"a collection no repository serves", ctx, bson.D{{Key: "$lookup", Value: bson.M{"from": "elsewhere", "localField": "a", "foreignField": "b", "as": "e"}}}, events.ErrUnguardedQuery, nil},
		{"out into a collection no repository serves", ctx, bson.D{{Key: "$out", Value: "report"}}, events.ErrUnguardedQuery, nil},
		{"a stage naming its collection twice", asAcme, bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "products"}, {Key: "from", Value: "accounts"}, {Key: "as", Value: "x"}}}}, events.ErrUnguardedQuery, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sent, err := f.run(c.ctx, mongo.Pipeline{c.stage})
			if c.refused != nil {
				assert.ErrorIs(t, err, c.refused)
				assert.Nil(t, sent, "nothing is sent")
				return
			}
			require.NotNil(t, sent, "sent (%v)", err)
			for _, h := range c.holds {
				assert.Contains(t, relaxed(t, sent), h)
			}
		})
	}
}

// TestSoftDeleteOutOnItsOwnCollection: $out into the model's own
// soft-deleted collection would purge its marked documents: refused,
// unless HardDelete.
func TestMergeIntoAnEncryptedCollectionByDatabase(t *testing.T) {
	f := newReachFixture(t)
	db := f.products.Collection().Database().Name()
	sent, err := f.run(ctx, mongo.Pipeline{{{Key: "$merge", Value: bson.M{"into": bson.M{"db": db, "coll": "secrets"}}}}})
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	assert.Nil(t, sent)
}

func TestSoftDeleteOutOnItsOwnCollection(t *testing.T) {
	f := newReachFixture(t)
	var out []bson.M
	p := mongo.Pipeline{{{Key: "$out", Value: "notes"}}}
	assert.ErrorIs(t, f.notes.Aggregate(ctx, p, &out), events.ErrUnguardedQuery)
	f.mu.Lock()
	assert.Empty(t, f.sent, "nothing is sent")
	f.mu.Unlock()
	err := f.notes.Aggregate(softdelete.HardDelete(ctx), p, &out)
	assert.NotErrorIs(t, err, events.ErrUnguardedQuery, "allowed under HardDelete (FerretDB itself lacks $out)")
}

// relaxed renders a BSON array as relaxed extended JSON, with spaces
// after colons as bson.Raw's String writes them.
func relaxed(t *testing.T, arr bson.Raw) string {
	t.Helper()
	vals, err := arr.Values()
	require.NoError(t, err)
	var b strings.Builder
	for _, v := range vals {
		b.WriteString(v.String())
		b.WriteString(" ")
	}
	return b.String()
}
