package mql_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/mql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestPrependMatch: a policy's condition opens any pipeline, and its Check
// finds it there, but not behind another stage.
func TestPrependMatch(t *testing.T) {
	cond := bson.E{Key: "gone", Value: nil}
	for name, p := range map[string]any{"nil": nil, "D stages": []bson.D{{{Key: "$sort", Value: bson.D{{Key: "a", Value: 1}}}}}, "A": bson.A{bson.M{"$limit": 1}}} {
		st, err := mql.PrependMatch(p, cond)
		require.NoError(t, err, name)
		assert.Equal(t, bson.D{{Key: "$match", Value: bson.D{cond}}}, st[0], name)
		ok, err := mql.LeadingMatchRequires(st, cond)
		require.NoError(t, err)
		assert.True(t, ok, name)
	}
	behind := []bson.D{{{Key: "$sort", Value: bson.D{{Key: "a", Value: 1}}}}, {{Key: "$match", Value: bson.D{cond}}}}
	ok, err := mql.LeadingMatchRequires(behind, cond)
	require.NoError(t, err)
	assert.False(t, ok, "a $match after another stage sees documents too late")
}
