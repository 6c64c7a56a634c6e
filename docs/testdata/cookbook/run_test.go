// Package cookbook runs docs/cookbook.md's snippets: TestCookbook copies
// this file beside them (they declare srv, TestMain and the functions
// called here), and checks each on the embedded server, reading what is
// stored with mongotest.Docs. It builds only there.
package cookbook

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

var ctx = context.Background()

// stored returns the documents of m's collection in db that match filter.
func stored(t *testing.T, db *mongo.Database, m mgm.Model, filter any) []bson.Raw {
	t.Helper()
	return mongotest.Docs(t, db.Collection(mgm.CollName(m)), filter)
}

func TestOutboxRefusesPooledDatabase(t *testing.T) {
	if !srv.Embedded {
		t.Skip("the pooled database is refused on the embedded server only")
	}
	bus := events.NewBus()
	bus.Register(outbox.New())
	orders, err := repo.New[*Order](bus, repo.WithDatabase(srv.PooledDatabase(t)))
	require.NoError(t, err)
	o := &Order{Status: "placed"}
	o.Record("order.placed", nil)
	err = orders.Insert(ctx, o)
	require.Error(t, err, "the outbox refuses a pooled database on the embedded server")
	assert.ErrorContains(t, err, "maxPoolSize=1")
}

func TestNewUsersAreActedOn(t *testing.T) {
	bus := events.NewBus()
	var welcomed []string
	onNewUser(bus, func(u *User) { welcomed = append(welcomed, u.Name) })
	users, err := repo.New[*User](bus, repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	require.NoError(t, users.Insert(ctx, &User{Name: "ann"}))
	require.NoError(t, users.InsertMany(ctx, []*User{{Name: "bob"}, {Name: "cy"}}))
	u := &User{Name: "dee"}
	require.NoError(t, users.Save(ctx, u))
	u.Name = "dee2"
	require.NoError(t, users.Save(ctx, u), "not new: not welcomed")
	assert.Equal(t, []string{"ann", "bob", "cy", "dee"}, welcomed)
}

func TestValidation(t *testing.T) {
	db := srv.Database(t)
	signups, err := newSignups(db)
	require.NoError(t, err)
	require.Error(t, signups.Insert(ctx, &Signup{Email: "nobody"}))
	require.NoError(t, signups.Insert(ctx, &Signup{Email: "ann@example.com"}))
	docs := stored(t, db, &Signup{}, bson.D{})
	require.Len(t, docs, 1)
	assert.Equal(t, "ann@example.com", docs[0].Lookup("email").StringValue())
}

func TestAuditing(t *testing.T) {
	db := srv.Database(t)
	posts, err := newPosts(db)
	require.NoError(t, err)
	p := &Post{Title: "hi"}
	require.NoError(t, posts.Insert(context.WithValue(ctx, actingUser{}, "ann"), p))
	p.Title = "hello"
	require.NoError(t, posts.Save(context.WithValue(ctx, actingUser{}, "bob"), p))
	docs := stored(t, db, p, bson.D{})
	require.Len(t, docs, 1)
	assert.Equal(t, "ann", docs[0].Lookup("createdBy").StringValue())
	assert.Equal(t, "bob", docs[0].Lookup("updatedBy").StringValue())
	_, err = docs[0].LookupErr("createdAt")
	assert.Error(t, err, "mgm's created_at only")
	assert.NotZero(t, docs[0].Lookup("created_at").Time())
}

func TestTenants(t *testing.T) {
	db := srv.Database(t)
	accounts, err := newAccounts(db)
	require.NoError(t, err)
	require.NoError(t, openAccount(ctx, accounts, "acme", "a1"))
	require.NoError(t, openAccount(ctx, accounts, "globex", "g1"))
	mine, err := accounts.Find(tenancy.WithTenant(ctx, "acme"), bson.D{})
	require.NoError(t, err)
	require.Len(t, mine, 1)
	assert.Equal(t, "a1", mine[0].Name)
	_, err = accounts.Find(ctx, bson.D{})
	require.ErrorIs(t, err, tenancy.ErrNoTenant)
	docs := stored(t, db, &Account{}, bson.M{"name": "g1"})
	require.Len(t, docs, 1)
	assert.Equal(t, "globex", docs[0].Lookup("tenant").StringValue())
}

func TestInvoiceNumbers(t *testing.T) {
	db := srv.Database(t)
	invoices, keys, err := newInvoices(db)
	require.NoError(t, err)
	defer keys.Close(ctx)
	for _, c := range []string{"a", "a", "b", "a"} {
		require.NoError(t, invoices.Insert(ctx, &Invoice{Customer: c}))
	}
	require.ErrorIs(t, invoices.Insert(ctx, &Invoice{}), autokeys.ErrEmptyScope)
	var got []string
	for _, d := range stored(t, db, &Invoice{}, bson.D{}) {
		got = append(got, d.Lookup("customer").StringValue()+" "+d.Lookup("no").StringValue())
	}
	slices.Sort(got)
	assert.Equal(t, []string{"a INV-0001", "a INV-0002", "a INV-0003", "b INV-0001"}, got)
}

func TestTrashAndRestore(t *testing.T) {
	db := srv.Database(t)
	notes, err := newNotes(db)
	require.NoError(t, err)
	n, other := &Note{Text: "draft"}, &Note{Text: "other"}
	require.NoError(t, notes.InsertMany(ctx, []*Note{n, other}))
	bin, err := trash(ctx, notes, n)
	require.NoError(t, err)
	require.Len(t, bin, 1)
	assert.NotNil(t, n.DeletedAt, "the model holds the mark")
	live, err := notes.Find(ctx, bson.D{})
	require.NoError(t, err)
	assert.Len(t, live, 1)
	require.Len(t, stored(t, db, n, bson.D{}), 2, "the document stays")

	require.NoError(t, untrash(ctx, notes, n))
	docs := stored(t, db, n, bson.M{"_id": n.ID})
	require.Len(t, docs, 1)
	assert.Equal(t, "draft (restored)", docs[0].Lookup("text").StringValue())
	_, err = docs[0].LookupErr("deletedAt")
	assert.Error(t, err, "the mark is gone")

	_, err = trash(ctx, notes, other)
	require.NoError(t, err)
	_, err = trash(ctx, notes, n)
	require.NoError(t, err)
	back, err := untrashAll(ctx, notes)
	require.NoError(t, err)
	assert.Equal(t, int64(2), back)
	assert.Empty(t, stored(t, db, n, bson.M{"deletedAt": bson.M{"$exists": true}}))
}

func TestPages(t *testing.T) {
	books, err := repo.New[*Book](events.NewBus(), repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	var all []*Book
	var want []string
	for i := range 45 {
		title := fmt.Sprintf("book %02d", (i*7)%45)
		all = append(all, &Book{Title: title})
		want = append(want, title)
	}
	require.NoError(t, books.InsertMany(ctx, all))
	slices.Sort(want)
	titles, total, err := allTitles(ctx, books)
	require.NoError(t, err)
	assert.Equal(t, int64(45), total)
	assert.Equal(t, want, titles)
}

func TestDTOs(t *testing.T) {
	customers, err := repo.New[*Customer](events.NewBus(), repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	require.NoError(t, customers.InsertMany(ctx, []*Customer{
		{Name: "cy", Email: "cy@x", Notes: "n"}, {Name: "ann", Email: "ann@x", Notes: "n"}, {Name: "bob", Email: "bob@x"},
	}))
	ann, page, err := customerCards(ctx, customers)
	require.NoError(t, err)
	assert.Equal(t, CustomerCard{Name: "ann", Email: "ann@x"}, ann)
	assert.Equal(t, []CustomerCard{{"ann", "ann@x"}, {"bob", "bob@x"}, {"cy", "cy@x"}}, page.Models)
}

func TestEncryptedField(t *testing.T) {
	db := srv.Database(t)
	secret := make([]byte, 32)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	patients, err := newPatients(db, encryption.Keys{{ID: "k1", Secret: secret}})
	require.NoError(t, err)
	require.NoError(t, patients.Insert(ctx, &Patient{Email: "ann@example.com", Notes: "asthma"}))
	p, err := findPatient(ctx, patients, "ann@example.com")
	require.NoError(t, err)
	assert.Equal(t, "asthma", p.Notes)
	docs := stored(t, db, p, bson.D{})
	require.Len(t, docs, 1)
	assert.Equal(t, bson.TypeBinary, docs[0].Lookup("email").Type, "ciphertext")
	assert.NotContains(t, string(docs[0]), "asthma")
	_, err = patients.Find(ctx, bson.M{"email": bson.M{"$regex": "^ann"}})
	require.ErrorIs(t, err, encryption.ErrEncryptedField)
}

func TestIndexes(t *testing.T) {
	db := srv.Database(t)
	products, err := newProducts(db)
	require.NoError(t, err)
	cur, err := db.Collection(mgm.CollName(&Product{})).Indexes().List(ctx)
	require.NoError(t, err)
	var idx []struct {
		Name string `bson:"name"`
		Key  bson.D `bson:"key"`
	}
	require.NoError(t, cur.All(ctx, &idx))
	var names []string
	for _, i := range idx {
		names = append(names, i.Name)
	}
	assert.Subset(t, names, []string{"sku_1", "byShop"})
	require.NoError(t, products.Insert(ctx, &Product{SKU: "a1", Shop: "s", Price: 3}))
	require.Error(t, products.Insert(ctx, &Product{SKU: "a1", Shop: "s", Price: 4}), "a unique SKU")
}

func TestOptimisticLocking(t *testing.T) {
	db := srv.Database(t)
	stock, err := repo.New[*Stock](events.NewBus(), repo.WithDatabase(db))
	require.NoError(t, err)
	s := &Stock{Count: 10}
	require.NoError(t, stock.Insert(ctx, s))
	stale, err := stock.FindByID(ctx, s.ID)
	require.NoError(t, err)
	require.NoError(t, take(ctx, stock, s.ID, 3))
	stale.Count = 100
	require.ErrorIs(t, stock.Save(ctx, stale), repo.ErrVersionConflict)
	require.NoError(t, take(ctx, stock, s.ID, 2))
	docs := stored(t, db, s, bson.D{})
	require.Len(t, docs, 1)
	assert.Equal(t, int32(5), docs[0].Lookup("count").Int32())
	assert.Equal(t, int64(3), docs[0].Lookup("version").Int64())
}

func TestTransfer(t *testing.T) {
	db := srv.Database(t)
	moves, err := repo.New[*Move](events.NewBus(), repo.WithDatabase(db))
	require.NoError(t, err)
	err = transfer(ctx, db.Client(), moves, "a", "b", 5)
	if srv.Embedded {
		require.ErrorIs(t, err, repo.ErrNoTransactions)
		assert.Empty(t, stored(t, db, &Move{}, bson.D{}), "the body did not run")
		return
	}
	srv.Require(t, "transactions")
	require.NoError(t, err)
	assert.Len(t, stored(t, db, &Move{}, bson.D{}), 2)
}

func TestOwnPolicy(t *testing.T) {
	db := srv.Database(t)
	ledger, err := newLedger(db)
	require.NoError(t, err)
	e := &Entry{Amount: 5}
	require.NoError(t, ledger.Insert(ctx, e))
	require.ErrorIs(t, ledger.Delete(events.WithoutEvents(ctx), e), errKeepLedger, "even with events off")
	_, err = ledger.DeleteMany(ctx, bson.D{})
	require.ErrorIs(t, err, errKeepLedger)
	assert.Len(t, stored(t, db, e, bson.D{}), 1)
}

func TestTimedOperations(t *testing.T) {
	var out bytes.Buffer
	bus := events.NewBus()
	timeOperations(bus, slog.New(slog.NewTextHandler(&out, nil)))
	users, err := repo.New[*User](bus, repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	require.NoError(t, users.Insert(ctx, &User{Name: "ann"}))
	_, err = users.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Contains(t, out.String(), "method=Insert collection=users")
	assert.Contains(t, out.String(), "method=Count collection=users")
}

func TestMailAfterWrite(t *testing.T) {
	bus := events.NewBus()
	var sent []string
	mail := mailNewUsers(bus, func(name string) error { sent = append(sent, name); return nil })
	users, err := repo.New[*User](bus, repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	require.NoError(t, users.InsertMany(ctx, []*User{{Name: "ann"}, {Name: "bob"}}))
	closing, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, mail.Close(closing))
	assert.Equal(t, []string{"ann", "bob"}, sent)
}

func TestBulkImport(t *testing.T) {
	bus := events.NewBus()
	heard := 0
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { heard++; return nil }))
	db := srv.Database(t)
	users, err := repo.New[*User](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, importUsers(ctx, users, []*User{{Name: "ann"}, {Name: "bob"}}))
	assert.Zero(t, heard, "a plain listener is silenced")
	assert.Len(t, mongotest.Docs(t, db.Collection("users"), bson.D{}), 2)
}
