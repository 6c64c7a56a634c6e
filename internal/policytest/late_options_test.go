package policytest_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestPoliciesHoldAgainstOptionsChangedLate: a listener that changes the
// caller's option structs after the policies checked them (an upsert
// switched on, a case-insensitive collation, raw command fields with a
// second pipeline) changes nothing that is sent: no document is inserted
// without its tenant and key, no command carries what tenancy refuses,
// and acme's aggregate returns acme's documents only.
func TestPoliciesHoldAgainstOptionsChangedLate(t *testing.T) {
	var mu sync.Mutex
	var sent []bson.Raw
	mon := options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, append(bson.Raw(nil), e.Command...))
	}})
	db := srv.Database(t, mon)
	ten := tenancy.New()
	keys, err := autokeys.New(db, autokeys.WithScopeSource(ten))
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(ten)
	accounts, err := repo.New[*Account](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	seedTenants(t, accounts)
	var late func()
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error {
		if late != nil {
			late()
		}
		return nil
	}), events.On(events.BeforeQuery, events.BeforeUpdate), events.ForType(reflect.TypeFor[*Account]()))

	no := false
	late = func() { no = true }
	_, err = accounts.UpdateOne(asAcme, bson.D{{Key: "name", Value: "flip"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "balance", Value: 1}}}}, &options.UpdateOptions{Upsert: &no})
	require.NoError(t, err)
	assert.Equal(t, int64(4), rawCount(t, db), "an update that was no upsert inserted a document")

	mu.Lock()
	sent = nil // what the Find and the Aggregate send
	mu.Unlock()
	find := options.Find()
	late = func() { find.Collation = &options.Collation{Locale: "en", Strength: 2} }
	_, err = accounts.Find(asAcme, bson.D{}, find)
	assert.NoError(t, err, "the collation set late was sent (FerretDB refuses collations)")

	agg := options.Aggregate()
	late = func() { agg.Custom = bson.M{"pipeline": bson.A{}, "collation": bson.M{"locale": "en", "strength": 2}} }
	var out []bson.M
	assert.NoError(t, accounts.Aggregate(asAcme, []bson.D{}, &out, agg), "the raw fields set late were sent")
	assert.Len(t, out, 2)
	for _, d := range out {
		assert.Equal(t, acme, d["tenant"], "acme's aggregate returned %v", d)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, c := range sent {
		_, err := c.LookupErr("collation")
		assert.Error(t, err, "a command carries a collation tenancy never saw: %v", c)
		if c.Index(0).Key() == "aggregate" {
			tenant, _ := c.Lookup("pipeline", "0", "$match", "tenant").StringValueOK()
			assert.Equal(t, acme, tenant, "an aggregate without the tenant's $match first: %v", c)
		}
	}
}
