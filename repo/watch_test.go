package repo_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// watchedMemo is under the three policies.
type watchedMemo struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Email            string     `bson:"email" policy:"encrypt,eq"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// watched returns a repository of watchedMemo on a bus with the three policies,
// and one acme watchedMemo stored, with its raw document.
func watched(t *testing.T) (*events.Bus, *repo.Repository[*watchedMemo], bson.Raw) {
	t.Helper()
	bus := policyBus(t)
	db := srv.Database(t)
	memos, err := repo.New[*watchedMemo](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	acme := tenancy.WithTenant(ctx, "acme")
	m := &watchedMemo{Email: "ann@example.com"}
	require.NoError(t, memos.Insert(acme, m))
	raw, err := db.Collection(memos.Collection().Name()).FindOne(ctx, bson.M{"_id": m.ID}).Raw()
	require.NoError(t, err)
	require.False(t, bytes.Contains(raw, []byte("ann@example.com")))
	return bus, memos, raw
}

// TestWatchUnderPolicies tests Watch's pipeline and its changes without a
// server, since the embedded one has no change streams (the driver's
// stream itself is run by TestWatchOnAServer, against MongoDB): the
// pipeline is confined to the tenant's live documents, under fullDocument;
// one that names an encrypted field is refused; a full document is
// decrypted, a change without one gives no model.
func TestWatchUnderPolicies(t *testing.T) {
	_, memos, raw := watched(t)
	acme := tenancy.WithTenant(ctx, "acme")
	insert := bson.Raw(bsonDoc(t, bson.D{{Key: "operationType", Value: "insert"}, {Key: "fullDocument", Value: raw}}))
	deleted := bson.Raw(bsonDoc(t, bson.D{{Key: "operationType", Value: "delete"}, {Key: "documentKey", Value: bson.D{{Key: "_id", Value: raw.Lookup("_id")}}}}))

	sent, got, err := memos.WatchChanges(acme, mongo.Pipeline{{{Key: "$match", Value: bson.M{"operationType": bson.M{"$in": bson.A{"insert", "delete"}}}}}}, insert, deleted)
	require.NoError(t, err)
	stages := bsonDoc(t, bson.D{{Key: "p", Value: sent}})
	leading := stages.Lookup("p", "0", "$match").String() + stages.Lookup("p", "1", "$match").String() + stages.Lookup("p", "2", "$match").String()
	assert.Contains(t, leading, `"fullDocument.tenant": "acme"`, "confined to the tenant, on the full document, first")
	assert.Contains(t, leading, `"fullDocument.deletedAt"`, "and to live documents")
	assert.Contains(t, leading, `"fullDocument": {"$type": "object"}`, "that a change carries")
	assert.Contains(t, stages.Lookup("p", "3", "$match").String(), "operationType", "the caller's stage after them")
	require.Len(t, got, 2)
	assert.Equal(t, "ann@example.com", got[0].Email, "decrypted")
	assert.Equal(t, "acme", got[0].Tenant)
	assert.Nil(t, got[1], "a delete carries no document")

	_, _, err = memos.WatchChanges(acme, mongo.Pipeline{{{Key: "$match", Value: bson.M{"fullDocument.email": "ann@example.com"}}}})
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	_, _, err = memos.WatchChanges(acme, mongo.Pipeline{{{Key: "$replaceRoot", Value: bson.M{"newRoot": "$fullDocument"}}}, {{Key: "$project", Value: bson.M{"email_bidx": 1}}}})
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	_, _, err = memos.WatchChanges(ctx, nil)
	assert.ErrorIs(t, err, tenancy.ErrNoTenant)

	_, _, err = memos.WatchChanges(acme, mongo.Pipeline{{{Key: "$addFields", Value: bson.M{"fullDocument.note": "x"}}}}, insert)
	assert.Error(t, err, "a stage that changes the document: its ciphertexts are not decrypted, and do not decode")
}

// TestWatchRefusesAFilter: a BeforeQuery listener that confines Watch
// through Event.Filter, which a change stream has not, gets the operation
// refused before anything is sent, rather than leaving it unconfined.
func TestWatchRefusesAFilter(t *testing.T) {
	bus, memos, _ := watched(t)
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Filter = bson.D{{Key: "hidden", Value: false}}
		return nil
	}), events.On(events.BeforeQuery), events.AsPolicy())
	acme := tenancy.WithTenant(ctx, "acme")
	_, err := memos.Watch(acme, nil)
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "Event.Filter on Watch")
	var out []*watchedMemo
	err = memos.Aggregate(acme, nil, &out)
	assert.ErrorIs(t, err, repo.ErrInvalidArgument, "Aggregate too")
}

// TestWatchOnAServer runs a change stream where the server has them.
func TestWatchOnAServer(t *testing.T) {
	srv.Require(t, "change-streams")
	_, memos, _ := watched(t)
	acme := tenancy.WithTenant(ctx, "acme")
	cs, err := memos.Watch(acme, nil, options.ChangeStream().SetFullDocument(options.UpdateLookup))
	require.NoError(t, err)
	defer cs.Close(ctx)
	require.NoError(t, memos.Insert(tenancy.WithTenant(ctx, "globex"), &watchedMemo{Email: "theirs@example.com"}))
	require.NoError(t, memos.Insert(acme, &watchedMemo{Email: "bob@example.com"}))
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.True(t, cs.Next(wait), "%v", cs.Err())
	assert.Equal(t, "insert", cs.OperationType())
	assert.Equal(t, "bob@example.com", cs.Model().Email, "acme's, decrypted; globex's was not delivered")
}

func bsonDoc(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(d)
	require.NoError(t, err)
	return b
}
