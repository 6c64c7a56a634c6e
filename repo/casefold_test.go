package repo_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// TestCaseFoldedKeysNotDecoded: an update of "NO" and "VERSION" (the key's
// and the version's names in another letter case) passes the key rule,
// which compares paths exactly, but the model does not decode them: it
// reads its key and version, and saved back keeps the stored key.
func TestCaseFoldedKeysNotDecoded(t *testing.T) {
	tickets, _, db := keyedTickets(t)
	tk := &ticket{Title: "cf"}
	require.NoError(t, tickets.Insert(ctx, tk))
	require.NotZero(t, tk.No)
	id := bson.D{{Key: "_id", Value: tk.ID}}
	if _, err := tickets.UpdateOne(ctx, id, bson.D{{Key: "$set", Value: bson.D{
		{Key: "NO", Value: int64(0)}, {Key: "VERSION", Value: int64(77)}, {Key: "Ref", Value: ""}}}}); err != nil {
		t.Logf("refused: %v", err)
	}
	got, err := tickets.FindOne(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, tk.No, got.No, "the model reads another key")
	assert.Equal(t, tk.Ref, got.Ref, "the model reads another uuid key")
	assert.Equal(t, tk.Version+1, got.Version, "the model reads the caller's version")

	require.NoError(t, tickets.Save(ctx, got))
	doc := mongotest.Docs(t, db.Collection("tickets"), id)[0]
	assert.Equal(t, tk.No, doc.Lookup("no").AsInt64(), "the key changed")
}

// keyedTickets returns a repository of tickets with AutoKeys, its bus and
// its database.
func keyedTickets(t *testing.T) (*repo.Repository[*ticket], *events.Bus, *mongo.Database) {
	t.Helper()
	db := srv.Database(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	tickets, err := repo.New[*ticket](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return tickets, bus, db
}
