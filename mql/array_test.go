package mql_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/mql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestArray: an array is read whatever form it has, a BSON one included,
// and a document is never taken for one.
func TestArray(t *testing.T) {
	raw, err := bson.Marshal(bson.D{{Key: "a", Value: bson.A{"x", "y"}}})
	require.NoError(t, err)
	for _, v := range []any{bson.A{"x", "y"}, []any{"x", "y"}, []string{"x", "y"}, [2]string{"x", "y"}, bson.Raw(raw).Lookup("a")} {
		a, err := mql.Array(v)
		if assert.NoError(t, err, "%T", v) && assert.Len(t, a, 2, "%T", v) {
			assert.Equal(t, "x", stringOf(a[0]), "%T", v)
		}
	}
	for _, v := range []any{bson.D{{Key: "x", Value: 1}}, bson.Raw(raw), []byte("xy"), "xy", bson.M{"x": 1}, nil, bson.Raw(raw).Lookup("a", "0")} {
		_, err := mql.Array(v)
		assert.ErrorIs(t, err, mql.ErrBadDocument, "%T %v", v, v)
	}
}

func stringOf(v any) string {
	if rv, ok := v.(bson.RawValue); ok {
		return rv.StringValue()
	}
	return v.(string)
}
