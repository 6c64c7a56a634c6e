package redteam_test

// Review 10: ways through the public API around the policies. Each test
// asserts the guarantee, and fails while the library breaks it.

import (
	"context"
	"crypto/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// AccountCopy is an untagged copy of the accounts, kept in a reporting
// database under the same collection name.
type AccountCopy struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string `bson:"tenant"`
	Name             string `bson:"name"`
}

func (*AccountCopy) CollectionName() string { return "accounts" }

// TestR10OutToAnotherDatabaseJudgedInOwn: $out's document form
// {db, coll} names a database, which mql.Reaches ignores for $out (it
// reads db only for $merge's into and $lookup's from): the stage is judged
// as writing the pipeline's own database's collection of that name. A
// reporting database that keeps an untagged copy under the same name
// ("accounts") makes the stage pass as a write of an ungoverned
// collection, and the driver sends an $out that replaces the main
// database's tenant, soft-deleted and encrypted collections.
func TestR10OutToAnotherDatabaseJudgedInOwn(t *testing.T) {
	var log wireLog
	w := wire(t, log.options())
	w.seed(t)
	reports := w.db.Client().Database(w.db.Name() + "_reports")
	t.Cleanup(func() { _ = reports.Drop(context.Background()) })
	copies, err := repo.New[*AccountCopy](w.bus, repo.WithDatabase(reports))
	require.NoError(t, err)
	before := len(log.sent("aggregate"))
	var out []bson.M
	err = copies.Aggregate(asAcme, mongo.Pipeline{{{Key: "$out", Value: bson.D{{Key: "db", Value: w.db.Name()}, {Key: "coll", Value: "accounts"}}}}}, &out)
	assert.ErrorIs(t, err, events.ErrUnguardedQuery, "a pipeline may not write the tenants' accounts of %s", w.db.Name())
	for _, c := range log.sent("aggregate")[before:] {
		t.Errorf("sent, replacing every tenant's accounts: %s", c.Lookup("pipeline"))
	}
}

// Memo is soft-deleted, and has no tenant.
type Memo struct {
	mgm.DefaultModel `bson:",inline"`
	Text             string     `bson:"text"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// TestR10WatchDeliversChangesOfDeletedDocuments: SoftDelete confines a
// change stream with {$match: {"fullDocument.deletedAt": null}}, which a
// change event without a full document satisfies (a missing field is
// null). So a watcher without WithDeleted is delivered the update of a
// marked document (its updateDescription.updatedFields), and, with
// SetFullDocumentBeforeChange, the whole marked document as the
// pre-image of an update or of its purge. The repository's doc says a
// change without a full document is not delivered. FerretDB has no change
// streams: the test runs the $match stages the driver sent on change
// events made from the stored, marked document.
func TestR10WatchDeliversChangesOfDeletedDocuments(t *testing.T) {
	var log wireLog
	db := srv.Database(t, log.options())
	bus := events.NewBus()
	bus.Register(softdelete.New())
	memos, err := repo.New[*Memo](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	m := &Memo{Text: "secret"}
	require.NoError(t, memos.Insert(ctx, m))
	require.NoError(t, memos.Delete(ctx, m))
	stored := mongotest.Docs(t, db.Collection("memos"), bson.D{})
	require.Len(t, stored, 1)
	require.NotEqual(t, bson.TypeNull, stored[0].Lookup("deletedAt").Type)

	_, _ = memos.Watch(ctx, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.WhenAvailable))
	sent := log.sent("aggregate")
	require.NotEmpty(t, sent, "the change stream was opened")
	var stages []bson.D
	require.NoError(t, bson.Unmarshal(bsonDoc(t, "p", sent[len(sent)-1].Lookup("pipeline")), &struct {
		P *[]bson.D `bson:"p"`
	}{&stages}))
	var confine []bson.D
	for _, s := range stages {
		if s[0].Key != "$changeStream" {
			confine = append(confine, s)
		}
	}
	require.NotEmpty(t, confine, "the soft delete's $match was sent")

	id := m.ID
	changes := db.Collection("r10_changes")
	_, err = changes.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "update of the marked memo"}, {Key: "operationType", Value: "update"}, {Key: "documentKey", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "updateDescription", Value: bson.D{{Key: "updatedFields", Value: bson.D{{Key: "text", Value: "secret, amended"}}}}},
			{Key: "fullDocumentBeforeChange", Value: stored[0]}},
		bson.D{{Key: "_id", Value: "purge of the marked memo"}, {Key: "operationType", Value: "delete"}, {Key: "documentKey", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "fullDocumentBeforeChange", Value: stored[0]}},
	})
	require.NoError(t, err)
	cur, err := changes.Aggregate(ctx, confine)
	require.NoError(t, err)
	var delivered []bson.M
	require.NoError(t, cur.All(ctx, &delivered))
	for _, d := range delivered {
		t.Errorf("delivered to a watcher without WithDeleted: %v", d["_id"])
	}
}

// bsonDoc wraps v in a document {key: v}.
func bsonDoc(t *testing.T, key string, v bson.RawValue) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(bson.D{{Key: key, Value: v}})
	require.NoError(t, err)
	return raw
}

// JSONContact is a model whose fields the application names with json tags,
// for a registry that falls back to them.
type JSONContact struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `json:"mail" policy:"encrypt,eq"`
	Notes            string `json:"memo" policy:"encrypt"`
}

// TestR10RegistryNamesEncryptedFieldsOtherwise: repo.WithRegistry checks
// only that the registry decodes the model strictly. A registry built as
// the docs say (RegisterStrict called on it) whose struct codec names
// fields by their json tags when they have no bson tag
// (bsoncodec.JSONFallbackStructTagParser, common where structs serve a
// JSON API too) stores Email under "mail"; the policies know the field as
// "email" (model.Of reads bson tags only), so the encryption finds no
// encrypted field in the document and the plaintext is stored.
//
//genv2:omit driver v2 exports no struct codec to build such a registry with
func TestR10RegistryNamesEncryptedFieldsOtherwise(t *testing.T) {
	db := srv.Database(t)
	reg := bson.NewRegistry()
	//lint:ignore SA1019 a registry a user can still build with driver v1
	sc, err := bsoncodec.NewStructCodec(bsoncodec.JSONFallbackStructTagParser)
	require.NoError(t, err)
	reg.RegisterKindEncoder(reflect.Struct, sc)
	reg.RegisterKindDecoder(reflect.Struct, sc)
	model.RegisterUUID(reg)
	require.NoError(t, model.RegisterStrict(reg))
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret}})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(enc)
	contacts, err := repo.New[*JSONContact](bus, repo.WithDatabase(db), repo.WithRegistry(reg))
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	err = contacts.Insert(ctx, &JSONContact{Email: "ann@example.com", Notes: "diagnosis: flu"})
	if err != nil {
		t.Logf("insert refused: %v", err)
		return
	}
	for _, d := range mongotest.Docs(t, db.Collection("json_contacts"), bson.D{}) {
		s := d.String()
		assert.NotContains(t, s, "ann@example.com", "the plaintext of an encrypted field was stored: %s", s)
		assert.NotContains(t, s, "diagnosis", "the plaintext of an encrypted field was stored: %s", s)
	}
}

// TestR10CollationWidensAReachingStage: Tenancy refuses a collation other
// than simple on a tenant model's own operations, since a case-insensitive
// one makes {tenant: "acme"} match "ACME", another tenant. A pipeline of
// an untagged model is not asked: its $unionWith, $lookup and $graphLookup
// into the tenants' accounts get the tenant's $match, and the aggregate's
// collation, which MongoDB applies to every stage of the command, sub-
// pipelines included, is sent with them. FerretDB ignores collations: the
// test judges what is sent.
func TestR10CollationWidensAReachingStage(t *testing.T) {
	var log wireLog
	w := wire(t, log.options())
	products, err := repo.New[*Plain](w.bus, repo.WithDatabase(w.db))
	require.NoError(t, err)
	folded := options.Aggregate().SetCollation(&options.Collation{Locale: "en", Strength: 2})
	for name, stage := range map[string]bson.D{
		"unionWith":   {{Key: "$unionWith", Value: "accounts"}},
		"lookup":      {{Key: "$lookup", Value: bson.D{{Key: "from", Value: "accounts"}, {Key: "localField", Value: "name"}, {Key: "foreignField", Value: "name"}, {Key: "as", Value: "a"}}}},
		"graphLookup": {{Key: "$graphLookup", Value: bson.D{{Key: "from", Value: "accounts"}, {Key: "startWith", Value: "$name"}, {Key: "connectFromField", Value: "name"}, {Key: "connectToField", Value: "name"}, {Key: "as", Value: "g"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			before := len(log.sent("aggregate"))
			var out []bson.M
			err := products.Aggregate(asAcme, mongo.Pipeline{stage}, &out, folded)
			assert.ErrorIs(t, err, events.ErrUnguardedQuery, "a case-insensitive collation over the tenant's $match")
			for _, c := range log.sent("aggregate")[before:] {
				if _, has := c.Lookup("collation").DocumentOK(); has {
					t.Errorf("sent with a case-insensitive collation, under which tenant acme matches ACME: %s", c)
				}
			}
		})
	}
}

// TestR10ReachFromAModelThePolicyDoesNotSee: a policy governs a
// collection whatever model's pipeline reaches it, but only the models
// whose events reach the policy are asked. Tenancy registered with
// events.ForModel[*Account]() (which the docs offer: it then enforces its
// tags for that model only, and repo.New of Account accepts it) never
// sees an untagged model's Aggregate, and a repository made on another
// bus, or on none (repo.New(nil): "no events"), has no policy at all: in
// each case a $unionWith of the tenants' accounts, in the database where
// they are governed, is sent unconfined.
func TestR10ReachFromAModelThePolicyDoesNotSee(t *testing.T) {
	var log wireLog
	db := srv.Database(t, log.options())
	bus := events.NewBus()
	bus.Register(tenancy.New(), events.ForModel[*Account]())
	bus.Register(softdelete.New())
	accounts, err := repo.New[*Account](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, accounts.Insert(asGlobex, &Account{Name: "theirs"}))
	products, err := repo.New[*Plain](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	unbussed, err := repo.New[*Product](nil, repo.WithDatabase(db))
	require.NoError(t, err)
	for name, run := range map[string]func(p mongo.Pipeline) error{
		"tenancy for Account only": func(p mongo.Pipeline) error { var out []bson.M; return products.Aggregate(asAcme, p, &out) },
		"a repository on no bus":   func(p mongo.Pipeline) error { var out []bson.M; return unbussed.Aggregate(asAcme, p, &out) },
	} {
		t.Run(name, func(t *testing.T) {
			before := len(log.sent("aggregate"))
			err := run(mongo.Pipeline{{{Key: "$unionWith", Value: "accounts"}}})
			for _, c := range log.sent("aggregate")[before:] {
				if !strings.Contains(c.Lookup("pipeline").String(), `{"$match": {"tenant": "acme"}}`) {
					t.Errorf("a $unionWith of every tenant's accounts was sent (%v): %s", err, c.Lookup("pipeline"))
				}
			}
		})
	}
}

// Product is an untagged model of its own collection.
type Product struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

// stagesValue is a pipeline that is not a slice: a value that encodes
// itself as an array of stages, which the driver accepts.
type stagesValue struct{ stages bson.A }

func (s stagesValue) MarshalBSONValue() (bsontype.Type, []byte, error) {
	return bson.MarshalValue(s.stages)
}

// TestR10PipelineValueCrashesCanon: with repo.WithRegistry, the repository
// re-encodes a pipeline stage by stage; mql.IsPipeline says yes to any
// value that encodes as an array, and canon then calls reflect's Len on
// it: a struct pipeline (a bsoncodec.ValueMarshaler, which the driver
// accepts as a pipeline) panics the caller's goroutine instead of being
// judged or refused.
func TestR10PipelineValueCrashesCanon(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(softdelete.New())
	products, err := repo.New[*Product](bus, repo.WithDatabase(db), repo.WithRegistry(model.Registry()))
	require.NoError(t, err)
	var out []bson.M
	assert.NotPanics(t, func() {
		_ = products.Aggregate(ctx, stagesValue{bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}}, &out)
	})
}
