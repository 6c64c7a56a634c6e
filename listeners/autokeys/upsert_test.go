package autokeys_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestMatchedUpsertCostsNoNumber: UpdateOne and UpdateMany upserts that
// match a document put back the number they reserved, so the documents
// stored are numbered without a gap; a FindOneAndUpdate upsert that
// matches leaves one, as docs/keys.md says.
func TestMatchedUpsertCostsNoNumber(t *testing.T) {
	users, _, db := keyed[*User](t)
	up := options.Update().SetUpsert(true)
	for range 3 {
		_, err := users.UpdateOne(ctx, bson.M{"userName": "ann"}, bson.M{"$set": bson.M{"userName": "ann"}}, up)
		require.NoError(t, err)
		_, err = users.UpdateMany(ctx, bson.M{"userName": "ann"}, bson.M{"$set": bson.M{"userName": "ann"}}, up)
		require.NoError(t, err)
	}
	_, err := users.UpdateOne(ctx, bson.M{"userName": "bob"}, bson.M{"$set": bson.M{"userName": "bob"}}, up)
	require.NoError(t, err)
	require.NoError(t, users.Insert(ctx, &User{UserName: "cid"}))
	_, err = users.FindOneAndUpdate(ctx, bson.M{"userName": "cid"}, bson.M{"$set": bson.M{"userName": "cid"}},
		options.FindOneAndUpdate().SetUpsert(true))
	require.NoError(t, err)
	require.NoError(t, users.Insert(ctx, &User{UserName: "dan"}))

	got := map[string]int64{}
	for _, raw := range mongotest.Docs(t, db.Collection("users"), nil) {
		got[raw.Lookup("userName").StringValue()] = raw.Lookup("longId").Int64()
	}
	assert.Equal(t, map[string]int64{"ann": 1, "bob": 2, "cid": 3, "dan": 5}, got,
		"six matched upserts cost nothing; the matched FindOneAndUpdate cost 4")
}

// TestPutBackUnderConcurrency: goroutines that mix matched upserts and
// inserts store every number once.
func TestPutBackUnderConcurrency(t *testing.T) {
	users, _, db := keyed[*User](t)
	const workers, each = 6, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			name := fmt.Sprintf("w%d", w)
			up := options.Update().SetUpsert(true)
			for range each {
				_, err := users.UpdateOne(ctx, bson.M{"userName": name}, bson.M{"$set": bson.M{"userName": name}}, up)
				assert.NoError(t, err)
				assert.NoError(t, users.Insert(ctx, &User{UserName: name + "-insert"}))
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	docs := mongotest.Docs(t, db.Collection("users"), nil)
	for _, raw := range docs {
		n := raw.Lookup("longId").Int64()
		assert.False(t, seen[n], "number %d twice", n)
		seen[n] = true
	}
	assert.Len(t, docs, workers*(each+1))
}
