package events_test

import (
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestAddExtraMergesOperators: listeners add to one operator each, and a
// document another event shares is never changed.
func TestAddExtraMergesOperators(t *testing.T) {
	shared := bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}
	e := &events.Event{Extra: shared}
	e.AddExtra("$set", "b", 2)
	e.AddExtra("$inc", "n", 1)
	e.AddExtra("$set", "c", 3)
	assert.Equal(t, bson.D{
		{Key: "$set", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}, {Key: "c", Value: 3}}},
		{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}},
	}, e.Extra)
	assert.Equal(t, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}, shared, "unchanged")

	e.AddTombstone("$set", "gone", true)
	assert.Equal(t, bson.D{{Key: "$set", Value: bson.D{{Key: "gone", Value: true}}}}, e.Tombstone)
	full := errors.New("full")
	e.AddGuard(bson.E{Key: "n", Value: bson.D{{Key: "$lt", Value: 5}}}, full)
	require.Len(t, e.Guards, 1)
	assert.Equal(t, full, e.Guards[0].Err)
}
