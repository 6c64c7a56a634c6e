package outbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// TestIDsTellApartWhatMongoDBTellsApart: _ids that differ in a value's
// type, or in bytes that are not UTF-8, get other subjects and lease
// keys, and a huge _id a key of bounded length.
func TestIDsTellApartWhatMongoDBTellsApart(t *testing.T) {
	oid := primitive.NewObjectID()
	assert.Equal(t, oid.Hex(), subject(oid))
	assert.Equal(t, "o:"+oid.Hex(), idKey(oid))
	assert.Equal(t, "a", subject("a"))
	assert.Equal(t, "s:a", idKey("a"))
	assert.Equal(t, `{"a":1}`, subject(bson.D{{Key: "a", Value: int32(1)}}))
	assert.Equal(t, `["a","b"]`, subject(bson.A{"a", "b"}))
	ids := []any{
		int32(7), int64(7), "7",
		bson.D{{Key: "a", Value: int32(1)}}, bson.D{{Key: "a", Value: "1"}},
		bson.D{{Key: "a", Value: "\xff"}}, bson.D{{Key: "a", Value: "\xfe"}},
		bson.D{{Key: "$numberInt", Value: "7"}},
		strings.Repeat("x", 1<<20), strings.Repeat("x", 1<<20) + "y",
		bson.D{{Key: "a", Value: strings.Repeat("\x01", 1<<20)}},
	}
	subjects, keys := map[string]any{}, map[string]any{}
	for _, id := range ids {
		k, s := idKey(id), subject(id)
		assert.LessOrEqual(t, len(k), 2+maxSubject, "%.40q", id)
		if other, ok := keys[k]; ok {
			t.Errorf("%.40q and %.40q share the lease key %s", id, other, k)
		}
		keys[k] = id
		if _, isString := id.(string); !isString && id != int64(7) { // the server holds int32 7 and int64 7 one _id
			if other, ok := subjects[s]; ok {
				t.Errorf("%.40q and %.40q share the subject %s", id, other, s)
			}
			subjects[s] = id
		}
	}
}
