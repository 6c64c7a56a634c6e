package policy_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// Shipment is data that must stay in its region: its `region:"home"`
// field names it.
type Shipment struct {
	mgm.DefaultModel `bson:",inline"`
	Region           string `bson:"region" region:"home"`
	Item             string `bson:"item"`
}

// NeedsPolicies makes repo.New refuse Shipment on a bus without Residency.
func (*Shipment) NeedsPolicies() []string { return []string{"region"} }

// Product is data of no region.
type Product struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

// ErrElsewhere: a document of another region.
var ErrElsewhere = errors.New("residency: the document belongs to another region")

// Residency is a policy of one process that serves one region: every
// operation on a collection with a region field is confined to it.
type Residency struct {
	region string
	table  *policy.Table[string] // the region field's BSON name
}

func NewResidency(region string) *Residency {
	return &Residency{region: region, table: policy.NewTable(func(s *model.Schema) (string, bool, error) {
		for _, f := range s.Fields {
			if _, ok := s.Struct.FieldByIndex(f.Index).Tag.Lookup("region"); ok {
				return f.BSON, true, nil
			}
		}
		return "", false, nil
	})}
}

func (*Residency) EnforcesPolicy()        {}
func (*Residency) EnforcesTags() []string { return []string{"region"} }
func (*Residency) EventTypes() []events.Type {
	return []events.Type{events.BeforeQuery, events.BeforeSave}
}

func (r *Residency) Prepare(t reflect.Type, coll *mongo.Collection) error {
	_, _, err := r.table.Prepare(t, coll)
	return err
}

func (r *Residency) HandleEvent(_ context.Context, e *events.Event) error {
	if e.Type == events.BeforeQuery && policy.Pipelined(e) {
		st, err := r.table.Reaches(e, func(s *mql.Reach, field string) error {
			if s.Writes {
				return ErrElsewhere
			}
			return s.Confine(bson.E{Key: field, Value: r.region})
		})
		if err != nil {
			return err
		}
		if st != nil {
			e.Pipeline = st
		}
	}
	field, governs, err := r.table.Model(e.ModelType)
	if err != nil || !governs {
		return err
	}
	cond := bson.E{Key: field, Value: r.region}
	switch {
	case e.Type == events.BeforeSave:
		if got, _ := e.Document.Lookup(field).StringValueOK(); got != r.region {
			return fmt.Errorf("%w: %q", ErrElsewhere, got)
		}
	case policy.Pipelined(e):
		e.Pipeline, err = mql.PrependMatch(e.Pipeline, policy.Stored(e, cond))
	default:
		e.Filter = mql.And(e.Filter, cond)
	}
	return err
}

// Example is an application's own policy, a data-residency rule, written
// against the public API only, as the built-in policies are.
func Example() {
	ctx := context.Background()
	db, done, err := mongotest.Database(ctx, "example")
	if err != nil {
		panic(err)
	}
	defer done()

	_, err = repo.New[*Shipment](events.NewBus(), repo.WithDatabase(db))
	fmt.Println("without the policy:", errors.Is(err, repo.ErrUnenforced))

	bus := events.NewBus()
	bus.Register(NewResidency("eu"))
	shipments, _ := repo.New[*Shipment](bus, repo.WithDatabase(db))
	products, _ := repo.New[*Product](bus, repo.WithDatabase(db))

	_ = shipments.Insert(ctx, &Shipment{Region: "eu", Item: "tea"})
	err = shipments.Insert(ctx, &Shipment{Region: "us", Item: "coffee"})
	fmt.Println("a US shipment:", errors.Is(err, ErrElsewhere))
	_, _ = shipments.Collection().InsertOne(ctx, bson.M{"region": "us", "item": "coffee"}) // a raw handle, by name

	all, _ := shipments.Find(ctx, bson.D{})
	fmt.Println("found:", len(all), all[0].Item)
	theirs, _ := shipments.Find(ctx, bson.M{"region": "us"})
	fmt.Println("asking for US shipments:", len(theirs))

	// A pipeline of another model that reaches shipments is confined too.
	var out []bson.M
	err = products.Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "shipments"}}}, &out)
	fmt.Println("$out into shipments:", errors.Is(err, ErrElsewhere))
	// Output:
	// without the policy: true
	// a US shipment: true
	// found: 1 tea
	// asking for US shipments: 0
	// $out into shipments: true
}
