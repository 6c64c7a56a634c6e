package mql_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/mql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// target is a field name with an encoding of its own: what a $rename of it
// moves to is what it encodes to, not its Go value.
type target struct{ name string }

func (t target) MarshalBSONValue() (bsontype.Type, []byte, error) {
	return bson.MarshalValue("enc_" + t.name)
}

// TestEncodeOperators: operators read as the driver sends them, a $rename
// target by its encoding; what is no document of fields, or no field name
// for $rename, is refused.
func TestEncodeOperators(t *testing.T) {
	ops, err := mql.EncodeOperators(nil, bson.D{
		{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}},
		{Key: "$rename", Value: bson.D{{Key: "b", Value: target{"c"}}}},
	})
	require.NoError(t, err)
	require.Len(t, ops, 2)
	var written []string
	for _, op := range ops {
		for _, f := range op.Value.(bson.D) {
			assert.IsType(t, bson.RawValue{}, f.Value)
			written = append(written, mql.Written(op.Key, f)...)
		}
	}
	assert.Equal(t, []string{"a", "b", "enc_c"}, written)

	for name, bad := range map[string]bson.D{
		"no document":      {{Key: "$set", Value: 1}},
		"rename to an int": {{Key: "$rename", Value: bson.D{{Key: "b", Value: 2}}}},
	} {
		_, err := mql.EncodeOperators(nil, bad)
		assert.ErrorIs(t, err, mql.ErrBadDocument, name)
	}
	assert.Equal(t, []string{"a"}, mql.Written("$set", bson.E{Key: "a", Value: "b"}), "only $rename's values name paths")
}
