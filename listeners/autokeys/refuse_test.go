package autokeys_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// TestDuplicateInTheDataIsRefused: a collection that already holds two
// documents with one number cannot get the unique index; repo.New fails
// with an error naming the collection, the field, the index and the
// cause, and no third document joins the two.
func TestDuplicateInTheDataIsRefused(t *testing.T) {
	db := srv.Database(t)
	_, err := db.Collection("users").InsertMany(ctx, []any{
		bson.M{"longId": int64(5), "userId": "a"}, bson.M{"longId": int64(5), "userId": "b"}})
	require.NoError(t, err)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	users, err := repo.New[*User](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, autokeys.ErrNoUniqueIndex)
	assert.Nil(t, users)
	for _, part := range []string{db.Name() + ".users", "LongID", "longId_1", "WithoutIndexes"} {
		assert.ErrorContains(t, err, part)
	}
	assert.True(t, strings.Contains(strings.ToLower(err.Error()), "duplicate"), "the cause: %v", err)
	assert.Len(t, mongotest.Docs(t, db.Collection("users"), nil), 2, "nothing was written")
	assert.False(t, uniqueOn(t, db.Collection("users"), "longId"))
}

// TestWithoutIndexesSaysSo: with WithoutIndexes, repo.New accepts the same
// collection, and Keys logs at Warn, once, the fields it leaves without a
// unique index.
func TestWithoutIndexesSaysSo(t *testing.T) {
	db := srv.Database(t)
	_, err := db.Collection("users").InsertMany(ctx, []any{bson.M{"longId": int64(5)}, bson.M{"longId": int64(5)}})
	require.NoError(t, err)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	_, _, _ = keyedOn[*User](t, db, autokeys.WithoutIndexes(), autokeys.WithLogger(logger))
	var rec struct {
		Level, Msg, Type, Collection string
		Fields                       []string
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1, buf.String())
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	assert.Equal(t, "WARN", rec.Level)
	assert.Contains(t, rec.Msg, "WithoutIndexes")
	assert.Equal(t, "*autokeys_test.User", rec.Type)
	assert.Equal(t, db.Name()+".users", rec.Collection)
	assert.ElementsMatch(t, []string{"userId", "longId"}, rec.Fields)
}

// Two models of one collection, "ledger", with a key field "no".
type (
	LedgerA struct {
		mgm.DefaultModel `bson:",inline"`
		No               int64 `bson:"no" auto:"inc,seq=ledger-a"`
	}
	LedgerB struct {
		mgm.DefaultModel `bson:",inline"`
		No               int64 `bson:"no" auto:"inc,seq=ledger-b"`
	}
	LedgerC struct { // as LedgerA
		mgm.DefaultModel `bson:",inline"`
		No               int64 `bson:"no" auto:"inc,seq=ledger-a"`
	}
	LedgerCode struct { // a formatted "no" from LedgerA's sequence
		mgm.DefaultModel `bson:",inline"`
		No               string `bson:"no" auto:"inc,seq=ledger-a,format=L{seq:4}"`
	}
	LedgerUUID struct {
		mgm.DefaultModel `bson:",inline"`
		No               string `bson:"no" auto:"uuid"`
	}
	LedgerScoped struct { // LedgerA's sequence, numbered per account
		mgm.DefaultModel `bson:",inline"`
		Account          string `bson:"account"`
		No               int64  `bson:"no" auto:"inc,seq=ledger-a,scope=account"`
	}
)

func (*LedgerA) CollectionName() string      { return "ledger" }
func (*LedgerB) CollectionName() string      { return "ledger" }
func (*LedgerC) CollectionName() string      { return "ledger" }
func (*LedgerCode) CollectionName() string   { return "ledger" }
func (*LedgerUUID) CollectionName() string   { return "ledger" }
func (*LedgerScoped) CollectionName() string { return "ledger" }

// TestModelsOfOneCollectionMustAgree: a second model of a collection whose
// key field is numbered from another sequence, with another format or
// scope, or as another kind is refused at repo.New with an error naming both models;
// one that declares it alike is accepted; and the documents stored have
// each number once.
func TestModelsOfOneCollectionMustAgree(t *testing.T) {
	db := srv.Database(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	a, err := repo.New[*LedgerA](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, a.Insert(ctx, &LedgerA{}))

	for name, err := range map[string]error{
		"another sequence": second[*LedgerB](bus, db),
		"a format":         second[*LedgerCode](bus, db),
		"a uuid":           second[*LedgerUUID](bus, db),
		"a scope":          second[*LedgerScoped](bus, db),
	} {
		require.ErrorIs(t, err, autokeys.ErrConflict, name)
		assert.ErrorContains(t, err, "*autokeys_test.LedgerA field No", name)
		assert.ErrorContains(t, err, db.Name()+".ledger", name)
	}
	c, err := repo.New[*LedgerC](bus, repo.WithDatabase(db))
	require.NoError(t, err, "declared alike")
	require.NoError(t, c.Insert(ctx, &LedgerC{}))
	nos := map[int64]int{}
	for _, raw := range mongotest.Docs(t, db.Collection("ledger"), nil) {
		nos[raw.Lookup("no").Int64()]++
	}
	assert.Equal(t, map[int64]int{1: 1, 2: 1}, nos)

	other := srv.Database(t) // another database: another collection
	_, err = repo.New[*LedgerB](bus, repo.WithDatabase(other))
	require.NoError(t, err)
}

// second returns the error of repo.New for T on bus, which names T.
func second[T mgm.Model](bus *events.Bus, db *mongo.Database) error {
	_, err := repo.New[T](bus, repo.WithDatabase(db))
	return err
}
