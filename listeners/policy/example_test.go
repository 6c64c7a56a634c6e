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

// Shipment is data that must stay in its region: its policy:"region"
// field names it, so repo.New refuses Shipment on a bus without Residency.
type Shipment struct {
	mgm.DefaultModel `bson:",inline"`
	Region           string `bson:"region" policy:"region"`
	Item             string `bson:"item"`
}

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
	return &Residency{region: region, table: policy.NewTable(regionField)}
}

// regionField returns the BSON name of the model's policy:"region" field,
// refusing, with the type, the field and its tag named, what the policy
// cannot govern: an option, a second field, a field that is no string.
func regionField(s *model.Schema) (string, bool, error) {
	fields := s.Policy("region")
	switch {
	case len(fields) == 0:
		return "", false, nil
	case len(fields) > 1:
		return "", false, fields[1].Err(s.Type, "a second region field (the first is "+fields[0].Name+")")
	case len(fields[0].Options) > 0:
		return "", false, fields[0].Err(s.Type, fmt.Sprintf("unknown option %q", fields[0].Options[0]))
	case fields[0].Type.Kind() != reflect.String:
		return "", false, fields[0].Err(s.Type, "the region field must be a string, not "+fields[0].Type.String())
	}
	return fields[0].BSON, true, nil
}

func (*Residency) EnforcesPolicy()        {}
func (*Residency) EnforcesTags() []string { return []string{"region"} }
func (*Residency) EventTypes() []events.Type {
	return []events.Type{events.BeforeQuery, events.BeforeSave, events.BeforeUpdate}
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
	case e.Type == events.BeforeUpdate:
		u, err := mql.ParseUpdate(e.Update)
		if err != nil || u.IsPipeline() || u.Touches(field) {
			return fmt.Errorf("%w: an update may not move a document out of the region", ErrElsewhere)
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
