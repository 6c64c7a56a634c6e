package repo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// invoice declares a unique number, a descending total and a compound
// index by customer and date.
type invoice struct {
	mgm.DefaultModel `bson:",inline"`
	Number           string    `bson:"number" index:"unique"`
	Total            int64     `bson:"total" index:"desc"`
	Customer         string    `bson:"customer" index:"name=byCustomer,order=1"`
	Issued           time.Time `bson:"issued" index:"name=byCustomer,order=2,desc"`
}

// invoiceRival is another model of invoice's collection whose byCustomer
// index has other keys.
type invoiceRival struct {
	mgm.DefaultModel `bson:",inline"`
	Customer         string `bson:"customer" index:"name=byCustomer"`
}

func (*invoiceRival) CollectionName() string { return "invoices" }

// invoiceLoose declares number without unique.
type invoiceLoose struct {
	mgm.DefaultModel `bson:",inline"`
	Number           string `bson:"number" index:""`
}

func (*invoiceLoose) CollectionName() string { return "invoices" }

// session expires a day after it was seen, and is unique per user among
// the active ones (a partial index, from its Indexes method).
type session struct {
	mgm.DefaultModel `bson:",inline"`
	User             string    `bson:"user"`
	Active           bool      `bson:"active"`
	Seen             time.Time `bson:"seen" index:"ttl=24h"`
}

func (*session) Indexes() []mongo.IndexModel {
	return []mongo.IndexModel{{
		Keys:    bson.D{{Key: "user", Value: 1}},
		Options: options.Index().SetName("activeUser").SetUnique(true).SetPartialFilterExpression(bson.D{{Key: "active", Value: true}}),
	}}
}

// listIndexes returns the collection's indexes by name, as the server
// lists them.
func listIndexes(t *testing.T, coll *mongo.Collection) map[string]bson.Raw {
	t.Helper()
	cur, err := coll.Indexes().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := map[string]bson.Raw{}
	for _, d := range docs {
		out[d.Lookup("name").StringValue()] = d
	}
	return out
}

func TestWithIndexesCreatesDeclaredIndexes(t *testing.T) {
	db := srv.Database(t)
	r, err := repo.New[*invoice](nil, repo.WithDatabase(db), repo.WithIndexes())
	if err != nil {
		t.Fatal(err)
	}
	have := listIndexes(t, r.Collection().Collection)
	want := map[string]string{
		"number_1":   `{"number": {"$numberInt":"1"}}`,
		"total_-1":   `{"total": {"$numberInt":"-1"}}`,
		"byCustomer": `{"customer": {"$numberInt":"1"},"issued": {"$numberInt":"-1"}}`,
	}
	for name, keys := range want {
		ix, ok := have[name]
		if !ok {
			t.Fatalf("index %s missing; have %v", name, have)
		}
		if got := ix.Lookup("key").String(); got != keys {
			t.Errorf("index %s keys %s, want %s", name, got, keys)
		}
	}
	if u, _ := have["number_1"].Lookup("unique").BooleanOK(); !u {
		t.Errorf("number_1 is not unique: %v", have["number_1"])
	}
	// Unique holds in the database.
	if err := r.Insert(context.Background(), &invoice{Number: "A1"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Insert(context.Background(), &invoice{Number: "A1"}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second A1: %v, want a duplicate key error", err)
	}
	// A second New finds them all and changes nothing.
	if _, err := repo.New[*invoice](nil, repo.WithDatabase(db), repo.WithIndexes()); err != nil {
		t.Fatal(err)
	}
	if n := len(listIndexes(t, r.Collection().Collection)); n != 4 {
		t.Errorf("%d indexes after a second New, want 4 (with _id_)", n)
	}
}

func TestWithIndexesIsOffByDefault(t *testing.T) {
	db := srv.Database(t)
	r, err := repo.New[*invoice](nil, repo.WithDatabase(db))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Insert(context.Background(), &invoice{Number: "A1"}); err != nil {
		t.Fatal(err)
	}
	if have := listIndexes(t, r.Collection().Collection); len(have) != 1 {
		t.Errorf("indexes without WithIndexes: %v, want only _id_", have)
	}
}

func TestWithIndexesRefusesConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		newR func(db *mongo.Database) error
		want []string
	}{
		{"same name, other keys", func(db *mongo.Database) error {
			_, err := repo.New[*invoiceRival](nil, repo.WithDatabase(db), repo.WithIndexes())
			return err
		}, []string{"declared index byCustomer {customer: 1}", "field Customer `index:\"name=byCustomer\"`",
			"existing index byCustomer {customer: 1, issued: -1}", "the same name with other keys"}},
		{"same keys, other options", func(db *mongo.Database) error {
			_, err := repo.New[*invoiceLoose](nil, repo.WithDatabase(db), repo.WithIndexes())
			return err
		}, []string{"declared index number_1 {number: 1} (declared by field Number `index:\"\"`)",
			"existing index number_1 {number: 1} unique", "other options"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := srv.Database(t)
			if _, err := repo.New[*invoice](nil, repo.WithDatabase(db), repo.WithIndexes()); err != nil {
				t.Fatal(err)
			}
			before := listIndexes(t, db.Collection("invoices"))
			err := tc.newR(db)
			if !errors.Is(err, repo.ErrIndexConflict) {
				t.Fatalf("err = %v, want ErrIndexConflict", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if after := listIndexes(t, db.Collection("invoices")); len(after) != len(before) {
				t.Errorf("indexes changed on a refusal: %v, were %v", after, before)
			}
		})
	}
}

func TestWithIndexesRefusesSameKeysUnderAnotherName(t *testing.T) {
	db := srv.Database(t)
	_, err := db.Collection("invoices").Indexes().CreateOne(context.Background(), mongo.IndexModel{
		Keys: bson.D{{Key: "total", Value: -1}}, Options: options.Index().SetName("totals")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = repo.New[*invoice](nil, repo.WithDatabase(db), repo.WithIndexes())
	if !errors.Is(err, repo.ErrIndexConflict) || !strings.Contains(err.Error(), "existing index totals {total: -1}") ||
		!strings.Contains(err.Error(), "declared index total_-1 {total: -1}") {
		t.Fatalf("err = %v, want ErrIndexConflict naming totals and total_-1", err)
	}
}

// TestWithIndexesSendsTTLAndPartial checks the createIndexes command: the
// embedded server implements neither option, so the server's listing is
// checked only where it does.
func TestWithIndexesSendsTTLAndPartial(t *testing.T) {
	var mu sync.Mutex
	var sent bson.Raw
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "createIndexes" {
			mu.Lock()
			sent = append(bson.Raw(nil), e.Command...)
			mu.Unlock()
		}
	}}
	db := srv.Database(t, options.Client().SetMonitor(mon))
	_, err := repo.New[*session](nil, repo.WithDatabase(db), repo.WithIndexes())
	mu.Lock()
	defer mu.Unlock()
	if sent == nil {
		t.Fatalf("no createIndexes sent (err %v)", err)
	}
	specs, _ := sent.Lookup("indexes").Array().Values()
	got := map[string]bson.Raw{}
	for _, s := range specs {
		d := s.Document()
		got[d.Lookup("name").StringValue()] = d
	}
	if v := got["seen_1"].Lookup("expireAfterSeconds"); v.AsInt64() != 86400 {
		t.Errorf("seen_1 sent as %v, want expireAfterSeconds 86400", got["seen_1"])
	}
	au := got["activeUser"]
	if pf := au.Lookup("partialFilterExpression").String(); pf != `{"active": true}` || !au.Lookup("unique").Boolean() {
		t.Errorf("activeUser sent as %v, want unique with partialFilterExpression {active: true}", au)
	}
	if err != nil {
		if strings.Contains(err.Error(), "NotImplemented") {
			t.Skipf("the server lacks TTL or partial indexes (%v); the command sent is checked above", err)
		}
		t.Fatal(err)
	}
	have := listIndexes(t, db.Collection("sessions"))
	if v := have["seen_1"].Lookup("expireAfterSeconds"); v.AsInt64() != 86400 {
		t.Errorf("seen_1 listed as %v", have["seen_1"])
	}
	if _, err := repo.New[*session](nil, repo.WithDatabase(db), repo.WithIndexes()); err != nil {
		t.Errorf("a second New: %v", err)
	}
}
