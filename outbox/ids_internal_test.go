package outbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// TestIDsTellApartWhatMongoDBTellsApart: _ids that differ in a value's
// type get other subjects and lease keys; each names its _id.
func TestIDsTellApartWhatMongoDBTellsApart(t *testing.T) {
	oid := primitive.NewObjectID()
	for _, c := range []struct {
		id       any
		subject  string
		leaseKey string
	}{
		{oid, oid.Hex(), "o:" + oid.Hex()},
		{"a", "a", "s:a"},
		{int32(7), "7", `j:{"$numberInt":"7"}`},
		{int64(7), "7", `j:{"$numberLong":"7"}`},
		{bson.D{{Key: "a", Value: int32(1)}}, `{"a":1}`, `j:{"a":{"$numberInt":"1"}}`},
		{bson.D{{Key: "a", Value: "1"}}, `{"a":"1"}`, `j:{"a":"1"}`},
		{bson.A{"a", "b"}, `["a","b"]`, `j:["a","b"]`},
	} {
		assert.Equal(t, c.subject, subject(c.id), "%#v", c.id)
		assert.Equal(t, c.leaseKey, idKey(c.id), "%#v", c.id)
	}
}
