package listeners_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// Customer uses every built-in: a number per tenant, an audit field, a
// Validate method, a tenant, a soft-delete mark, an encrypted email found
// by equality, and domain events stored with the change.
type Customer struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	No               int64      `bson:"no" auto:"inc,scope=tenant"`
	Email            string     `bson:"email" policy:"encrypt,eq"`
	CreatedBy        string     `bson:"createdBy" audit:"createdBy"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// Validate is called by listeners.Validation before every save.
func (c *Customer) Validate() error {
	if c.Email == "" {
		return listeners.FieldError{Field: "Email", Reason: "is required"}
	}
	return nil
}

// actingUser is where the application keeps the acting user in a context.
type actingUser struct{}

// newBus registers every built-in listener and policy on one bus, in the
// order they run.
func newBus(db *mongo.Database, ring encryption.Keys) (*events.Bus, *autokeys.Keys, error) {
	who := func(ctx context.Context) (any, error) { return ctx.Value(actingUser{}), nil }
	ten := tenancy.New()
	keys, err := autokeys.New(db, autokeys.WithScopeSource(ten))
	if err != nil {
		return nil, nil, err
	}
	enc, err := encryption.New(ring)
	if err != nil {
		return nil, nil, err
	}

	bus := events.NewBus()
	bus.Register(keys, events.Order(-100))                          // before listeners of the default Order 0: they see the keys
	bus.Register(listeners.NewAuditing(listeners.WithAuditor(who))) // created/updated at and by, on the model before encoding
	bus.Register(listeners.NewValidation(nil))                      // BeforeSave: judges the model with keys and audit fields set
	bus.Register(listeners.NewLogging(slog.Default()))              // last plain listener: its records show what the others did
	bus.Register(ten)                                               // policies: after every plain listener, whatever its Order
	bus.Register(softdelete.New(softdelete.WithActor(who)))         // a delete becomes an update that sets deletedAt
	bus.Register(enc)                                               // after tenancy and soft delete: encrypts what they leave
	bus.Register(outbox.New())                                      // last: adds the recorded events to the same write
	return bus, keys, nil
}

// Every built-in on one bus: AutoKeys, Auditing, Validation and Logging,
// then the policies Tenancy, SoftDelete, Encryption and the outbox.
func Example_wiring() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()
	secret := make([]byte, encryption.MinSecretLen)
	rand.Read(secret) // an application reads its ring with encryption.ParseKeys
	bus, keys, err := newBus(db, encryption.Keys{{ID: "k1", Secret: secret}})
	if err != nil {
		panic(err)
	}
	defer keys.Close(ctx)
	customers, err := repo.New[*Customer](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}

	acme := context.WithValue(tenancy.WithTenant(ctx, "acme"), actingUser{}, "ann")
	c := &Customer{Email: "bob@example.com"}
	c.Record("customer.joined", nil)
	if err := customers.Insert(acme, c); err != nil {
		panic(err)
	}
	fmt.Println(c.Tenant, c.No, c.CreatedBy)

	found, err := customers.FindOne(acme, bson.M{"email": "bob@example.com"})
	if err != nil {
		panic(err)
	}
	fmt.Println("found by email:", found.No)

	raw, err := db.Collection("customers").FindOne(ctx, bson.M{}).Raw()
	if err != nil {
		panic(err)
	}
	pending, _ := raw.Lookup(outbox.Field, "q").Array().Values()
	fmt.Println("stored email:", raw.Lookup("email").Type, "events pending:", len(pending))

	if err := customers.Delete(acme, found); err != nil {
		panic(err)
	}
	live, _ := customers.Count(acme, bson.D{})
	all, _ := customers.Count(softdelete.WithDeleted(acme), bson.D{})
	fmt.Println("live:", live, "with deleted:", all)

	fmt.Println(customers.Insert(acme, &Customer{}) != nil)
	_, err = customers.Find(ctx, bson.D{})
	fmt.Println(errors.Is(err, tenancy.ErrNoTenant))
	// Output:
	// acme 1 ann
	// found by email: 1
	// stored email: binary events pending: 1
	// live: 0 with deleted: 1
	// true
	// true
}
