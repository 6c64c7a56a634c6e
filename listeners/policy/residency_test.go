package policy_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// sent records the aggregate commands the driver sends.
type sent struct {
	mu   sync.Mutex
	cmds []bson.Raw
}

func (s *sent) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "aggregate" {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.cmds = append(s.cmds, append(bson.Raw(nil), e.Command...))
		}
	}})
}

func (s *sent) last(t *testing.T) bson.Raw {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.cmds)
	return s.cmds[len(s.cmds)-1]
}

// residencyRepos returns the repositories of Shipment and Product on a
// bus with Residency for "eu", and a shipment stored for each region, the
// US one through a raw handle.
func residencyRepos(t *testing.T, opts ...*options.ClientOptions) (*repo.Repository[*Shipment], *repo.Repository[*Product], *mongo.Database) {
	t.Helper()
	db := mongotest.Start(t).Database(t, opts...)
	bus := events.NewBus()
	bus.Register(NewResidency("eu"))
	shipments, err := repo.New[*Shipment](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	products, err := repo.New[*Product](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, shipments.Insert(ctx, &Shipment{Region: "eu", Item: "tea"}))
	_, err = db.Collection("shipments").InsertOne(ctx, bson.M{"region": "us", "item": "coffee"})
	require.NoError(t, err)
	return shipments, products, db
}

var ctx = context.Background()

// TestResidencyRefusedWithoutThePolicy: a policy:"region" model is refused
// at repo.New on a bus without Residency, as a built-in policy's tag is,
// though model knows no policy by name; and a misspelt policy name too.
func TestResidencyRefusedWithoutThePolicy(t *testing.T) {
	type misspelt struct {
		mgm.DefaultModel `bson:",inline"`
		Region           string `bson:"region" policy:"regoin"`
	}
	db := mongotest.Start(t).Database(t)
	_, err := repo.New[*Shipment](events.NewBus(), repo.WithDatabase(db))
	require.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `"region"`)
	bus := events.NewBus()
	bus.Register(NewResidency("eu"))
	_, err = repo.New[*misspelt](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, repo.ErrUnenforced, "a name no policy enforces fails closed")
	assert.ErrorContains(t, err, `"regoin"`)
}

// TestResidencyValidatesItsFields: the policy checks its own fields when
// the repository is created, with the type, the field and the tag named.
func TestResidencyValidatesItsFields(t *testing.T) {
	type notString struct {
		mgm.DefaultModel `bson:",inline"`
		Region           int `bson:"region" policy:"region"`
	}
	type withOption struct {
		mgm.DefaultModel `bson:",inline"`
		Region           string `bson:"region" policy:"region,strict"`
	}
	db := mongotest.Start(t).Database(t)
	bus := events.NewBus()
	bus.Register(NewResidency("eu"))
	_, err := repo.New[*notString](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, "notString field Region `policy:\"region\"`: the region field must be a string, not int")
	_, err = repo.New[*withOption](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, "withOption field Region `policy:\"region,strict\"`: unknown option \"strict\"")
}

// TestResidencyHoldsThroughFilters: no filter reaches the other region's
// document, for a read, a count, an update or a delete, judged on the
// database.
func TestResidencyHoldsThroughFilters(t *testing.T) {
	shipments, _, db := residencyRepos(t)
	for _, f := range []bson.D{
		{{Key: "region", Value: "us"}},
		{{Key: "$or", Value: bson.A{bson.D{{Key: "region", Value: "us"}}, bson.D{{Key: "region", Value: "eu"}}}}},
		{{Key: "region", Value: bson.D{{Key: "$ne", Value: "eu"}}}},
		{{Key: "item", Value: "coffee"}},
	} {
		found, err := shipments.Find(ctx, f)
		require.NoError(t, err)
		for _, s := range found {
			assert.Equal(t, "eu", s.Region, "%v", f)
		}
		n, err := shipments.Count(ctx, f)
		require.NoError(t, err)
		assert.LessOrEqual(t, n, int64(1), "%v", f)
	}
	_, err := shipments.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "item", Value: "gone"}}}})
	require.NoError(t, err)
	_, err = shipments.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "region", Value: "us"}}}})
	require.ErrorIs(t, err, ErrElsewhere, "an update may not move a document out of the region")
	_, err = shipments.DeleteMany(ctx, bson.D{{Key: "region", Value: "us"}})
	require.NoError(t, err)
	us := mongotest.Docs(t, db.Collection("shipments"), bson.M{"region": "us"})
	require.Len(t, us, 1, "the US document is still stored")
	assert.Equal(t, "coffee", us[0].Lookup("item").StringValue(), "and unchanged")
}

// TestResidencyHoldsThroughStages: a pipeline of another model that
// reaches shipments through $lookup or $unionWith is confined to the
// region, judged by what the driver sends (the embedded server lacks
// both stages); one that writes shipments is refused; and one that
// reaches a collection no repository serves is refused.
func TestResidencyHoldsThroughStages(t *testing.T) {
	log := &sent{}
	_, products, _ := residencyRepos(t, log.monitor())
	confined := bson.D{{Key: "$match", Value: bson.D{{Key: "region", Value: "eu"}}}}
	for name, stage := range map[string]bson.D{
		"$lookup": {{Key: "$lookup", Value: bson.D{{Key: "from", Value: "shipments"}, {Key: "as", Value: "s"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "region", Value: "us"}}}}}}}}},
		"$lookup by fields": {{Key: "$lookup", Value: bson.D{{Key: "from", Value: "shipments"}, {Key: "localField", Value: "name"},
			{Key: "foreignField", Value: "item"}, {Key: "as", Value: "s"}}}},
		"$unionWith": {{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "shipments"}}}},
	} {
		var out []bson.M
		_ = products.Aggregate(ctx, mongo.Pipeline{stage}, &out) // the server may lack the stage: judge what was sent
		st := log.last(t).Lookup("pipeline").Array().Index(0).Value().Document().Index(0)
		sub := st.Value().Document().Lookup("pipeline")
		require.Equal(t, bson.TypeArray, sub.Type, name)
		first, err := bson.Marshal(confined)
		require.NoError(t, err)
		assert.Equal(t, bson.Raw(first).String(), sub.Array().Index(0).Value().Document().String(), "%s: the region's $match comes first", name)
	}
	for _, stage := range []bson.D{
		{{Key: "$out", Value: "shipments"}},
		{{Key: "$merge", Value: bson.D{{Key: "into", Value: "shipments"}}}},
	} {
		var out []bson.M
		err := products.Aggregate(ctx, mongo.Pipeline{stage}, &out)
		require.ErrorIs(t, err, ErrElsewhere, "%v", stage)
	}
	var out []bson.M
	err := products.Aggregate(ctx, mongo.Pipeline{{{Key: "$unionWith", Value: "unknown"}}}, &out)
	require.True(t, errors.Is(err, events.ErrUnguardedQuery), "%v", err)
}

// shipmentView reads shipments without their region field.
type shipmentView struct {
	mgm.DefaultModel `bson:",inline"`
	Item             string `bson:"item"`
}

func (*shipmentView) CollectionName() string { return "shipments" }

// TestResidencyCollectionAgreement: a second model of the shipments
// collection that leaves the region field out, and so would reach every
// region's documents, is refused at repo.New, naming both models and the
// policy, as for the built-in policies: repo agrees on the fields of any
// policy name.
func TestResidencyCollectionAgreement(t *testing.T) {
	db := mongotest.Start(t).Database(t)
	bus := events.NewBus()
	bus.Register(NewResidency("eu"))
	_, err := repo.New[*Shipment](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = repo.New[*shipmentView](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `policy_test.Shipment, whose "region" fields are [region], while *policy_test.shipmentView's are none`)
	_, err = repo.New[*shipmentView](bus, repo.WithDatabase(db), repo.Unenforced("region"))
	require.NoError(t, err, "unless it says so")
}
