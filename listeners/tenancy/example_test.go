package tenancy_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

func exampleDB(ctx context.Context) (*mongo.Database, func()) {
	db, done, err := mongotest.Database(ctx, "example")
	if err != nil {
		panic(err)
	}
	return db, done
}

// Invoice belongs to a tenant and is numbered per tenant.
type Invoice struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant" policy:"tenant"`
	No               int64  `bson:"no" auto:"inc,scope=tenant"`
	Amount           int    `bson:"amount"`
}

func ExampleNew() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	ten := tenancy.New()
	keys, err := autokeys.New(db, autokeys.WithScopeSource(ten))
	if err != nil {
		panic(err)
	}
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(ten)
	invoices, err := repo.New[*Invoice](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	acme := tenancy.WithTenant(ctx, "acme")
	globex := tenancy.WithTenant(ctx, "globex")
	for _, c := range []context.Context{acme, acme, globex} {
		inv := &Invoice{Amount: 10}
		if err := invoices.Insert(c, inv); err != nil {
			panic(err)
		}
		fmt.Println(inv.Tenant, inv.No)
	}
	n, _ := invoices.Count(acme, bson.M{"tenant": "globex"}) // stays inside acme
	fmt.Println("acme sees of globex:", n)
	_, err = invoices.Find(ctx, bson.D{})
	fmt.Println(errors.Is(err, tenancy.ErrNoTenant))
	// Output:
	// acme 1
	// acme 2
	// globex 1
	// acme sees of globex: 0
	// true
}
