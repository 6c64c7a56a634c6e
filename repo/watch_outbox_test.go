package repo_test

import (
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// boxedNote records domain events in an outbox.
type boxedNote struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Text             string `bson:"text"`
}

// TestWatchUnderOutbox: Watch on a model that embeds outbox.Recorder is
// confined, like Aggregate, by a leading $match that keeps tombstones out,
// on the change event's full document.
func TestWatchUnderOutbox(t *testing.T) {
	bus := events.NewBus()
	bus.Register(outbox.New())
	notes, err := repo.New[*boxedNote](bus, repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	insert := bson.Raw(bsonDoc(t, bson.D{{Key: "operationType", Value: "insert"},
		{Key: "fullDocument", Value: bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "text", Value: "hi"}}}}))
	sent, got, err := notes.WatchChanges(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.M{"operationType": "insert"}}}}, insert)
	require.NoError(t, err)
	stages := bsonDoc(t, bson.D{{Key: "p", Value: sent}})
	assert.Contains(t, stages.Lookup("p", "0", "$match").String(), `"fullDocument.`+outbox.Field+`.gone": {"$exists": false}`,
		"tombstones kept out, on the full document, first")
	assert.Contains(t, stages.Lookup("p", "1", "$match").String(), "operationType", "the caller's stage after it")
	require.Len(t, got, 1)
	assert.Equal(t, "hi", got[0].Text)
}
