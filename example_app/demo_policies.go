package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// Customer is confined to its tenant, numbered per tenant, soft-deleted,
// and its email is stored encrypted yet found by equality.
type Customer struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	No               int64      `bson:"no" auto:"inc,scope=tenant"`
	Name             string     `bson:"name"`
	Email            string     `bson:"email" policy:"encrypt,eq"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// CollectionName keeps the demo's customers apart from any of yours.
func (*Customer) CollectionName() string { return "demo_customers" }

// demoKeys reads the key ring from MGMEVENTS_KEYS, or makes one random key
// for this run.
func demoKeys() (encryption.Keys, string, error) {
	if s := os.Getenv("MGMEVENTS_KEYS"); s != "" {
		keys, err := encryption.ParseKeys(s)
		return keys, "MGMEVENTS_KEYS", err
	}
	secret := make([]byte, encryption.MinSecretLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, "", err
	}
	return encryption.Keys{{ID: "demo", Secret: secret}}, "one random key for this run (set MGMEVENTS_KEYS to keep one)", nil
}

// demoPolicies is the demo's second part: tenancy, soft delete and field
// encryption on one bus.
func demoPolicies(ctx context.Context, out io.Writer, db *mongo.Database) error {
	fmt.Fprintln(out, "\nPart 2: the policies, tenancy, soft delete and encryption, on one bus")
	ring, from, err := demoKeys()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   key ring: %s\n", from)
	// Start empty: documents of an earlier run may be under another key.
	if err := db.Collection((*Customer)(nil).CollectionName()).Drop(ctx); err != nil {
		return err
	}

	ten := tenancy.New()
	keys, err := autokeys.New(db, autokeys.WithScopeSource(ten))
	if err != nil {
		return err
	}
	defer keys.Close(ctx)
	enc, err := encryption.New(ring)
	if err != nil {
		return err
	}
	bus := events.NewBus()
	bus.Register(keys, events.Order(-100))
	bus.Register(ten) // the policies run after every other listener
	bus.Register(softdelete.New())
	bus.Register(enc)
	customers, err := repo.New[*Customer](bus, repo.WithDatabase(db))
	if err != nil {
		return err
	}

	fmt.Fprintln(out, "\n8. Two tenants: each numbers its own customers and sees only them")
	acme, globex := tenancy.WithTenant(ctx, "acme"), tenancy.WithTenant(ctx, "globex")
	var ann *Customer
	for _, c := range []struct {
		ctx         context.Context
		name, email string
	}{
		{acme, "Ann", "ann@example.com"},
		{acme, "Bob", "bob@example.com"},
		{globex, "Cy", "cy@example.com"},
	} {
		m := &Customer{Name: c.name, Email: c.email}
		if err := customers.Insert(c.ctx, m); err != nil {
			return err
		}
		if ann == nil {
			ann = m
		}
		fmt.Fprintf(out, "   %-6s no=%d %s\n", m.Tenant, m.No, m.Name)
	}
	nAcme, err := customers.Count(acme, bson.D{})
	if err != nil {
		return err
	}
	nGlobex, err := customers.Count(globex, bson.D{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> acme counts %d customers, globex %d\n", nAcme, nGlobex)
	_, err = customers.Count(ctx, bson.D{})
	var le *events.ListenerError
	if !errors.As(err, &le) {
		return fmt.Errorf("a count with no tenant was not refused: %v", err)
	}
	fmt.Fprintf(out, "   -> with no tenant, refused: %v\n", le.Err)

	fmt.Fprintln(out, "\n9. Find by the encrypted email: the filter becomes a blind-index lookup")
	found, err := customers.FindOne(acme, bson.M{"email": "ann@example.com"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> acme finds %s (no=%d) by %s\n", found.Name, found.No, found.Email)
	if _, err = customers.FindOne(globex, bson.M{"email": "ann@example.com"}); !errors.Is(err, repo.ErrNotFound) {
		return fmt.Errorf("globex found acme's customer: %v", err)
	}
	fmt.Fprintln(out, "   -> globex looks for the same email: not found")

	fmt.Fprintln(out, "\n10. What is at rest: Ann's document, read with the driver, around the repository")
	raw, err := db.Collection(ann.CollectionName()).FindOne(ctx, bson.D{{Key: "_id", Value: ann.ID}}).Raw()
	if err != nil {
		return err
	}
	elems, err := raw.Elements()
	if err != nil {
		return err
	}
	for _, e := range elems {
		fmt.Fprintf(out, "   %-10s %s\n", e.Key(), relaxed(e.Value()))
	}
	fmt.Fprintln(out, "   -> email is AES-256-GCM ciphertext (binary subtype 8e); email_bidx, its blind index, serves the lookup")

	fmt.Fprintln(out, "\n11. Soft delete and restore")
	if err := customers.Delete(acme, found); err != nil {
		return err
	}
	live, _ := customers.Count(acme, bson.D{})
	all, _ := customers.Count(softdelete.WithDeleted(acme), bson.D{})
	fmt.Fprintf(out, "   -> Ann deleted: acme sees %d customer, %d with softdelete.WithDeleted\n", live, all)
	raw, err = db.Collection(ann.CollectionName()).FindOne(ctx, bson.D{{Key: "_id", Value: ann.ID}}).Raw()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "   -> still stored, marked: deletedAt %s\n", relaxed(raw.Lookup("deletedAt")))
	if err := softdelete.RestoreModel(acme, customers, found); err != nil {
		return err
	}
	live, _ = customers.Count(acme, bson.D{})
	fmt.Fprintf(out, "   -> restored (softdelete.RestoreModel unsets the marks): acme sees %d customers\n", live)
	return nil
}

// relaxed returns v as relaxed extended JSON: dates as text, numbers plain.
func relaxed(v bson.RawValue) string {
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	if err != nil {
		return v.String()
	}
	return string(b[len(`{"v":`) : len(b)-1])
}
