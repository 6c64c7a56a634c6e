package autokeys_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Issue is numbered per project and document type, and gets a code per
// project.
type Issue struct {
	mgm.DefaultModel `bson:",inline"`
	Project          string `bson:"projectId"`
	DocType          int32  `bson:"docType"`
	No               int64  `bson:"no" auto:"inc,scope=projectId+docType"`
	Code             string `bson:"code" auto:"inc,scope=projectId,format=I-{seq:3}"`
	Title            string `bson:"title"`
}

// stored returns "project/docType" -> the numbers stored there, in order.
func stored(t *testing.T, db *mongo.Database) map[string][]int64 {
	t.Helper()
	got := map[string][]int64{}
	for _, raw := range mongotest.Docs(t, db.Collection("issues"), bson.D{}) {
		k := fmt.Sprintf("%s/%d", raw.Lookup("projectId").StringValue(), raw.Lookup("docType").Int32())
		got[k] = append(got[k], raw.Lookup("no").Int64())
	}
	for _, nos := range got {
		slices.Sort(nos)
	}
	return got
}

// compoundUnique reports whether coll has a unique index on exactly keys.
func compoundUnique(t *testing.T, coll *mongo.Collection, keys ...string) bool {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	for _, s := range specs {
		var d bson.D
		require.NoError(t, bson.Unmarshal(s.KeysDocument, &d))
		names := make([]string, len(d))
		for i, e := range d {
			names[i] = e.Key
		}
		if fmt.Sprint(names) == fmt.Sprint(keys) && s.Unique != nil && *s.Unique {
			return true
		}
	}
	return false
}

// TestScopedNumbers: each combination of the scope fields' values counts
// from 1, with Insert and InsertMany; the unique indexes are compound; the
// documents stored hold the numbers; a model whose scope field is empty is
// refused, naming the model, the field and the scope field, and nothing of
// its batch is stored.
func TestScopedNumbers(t *testing.T) {
	issues, _, db := keyed[*Issue](t)
	for _, in := range []*Issue{{Project: "a", DocType: 1}, {Project: "a", DocType: 1}, {Project: "b", DocType: 1}, {Project: "a", DocType: 2}} {
		require.NoError(t, issues.Insert(ctx, in))
	}
	batch := []*Issue{{Project: "b", DocType: 1}, {Project: "a", DocType: 2}, {Project: "c", DocType: 1}, {Project: "b", DocType: 1}}
	require.NoError(t, issues.InsertMany(ctx, batch))
	assert.Equal(t, []int64{2, 2, 1, 3}, []int64{batch[0].No, batch[1].No, batch[2].No, batch[3].No})
	assert.Equal(t, []string{"I-002", "I-004", "I-001", "I-003"}, []string{batch[0].Code, batch[1].Code, batch[2].Code, batch[3].Code})
	assert.Equal(t, map[string][]int64{"a/1": {1, 2}, "a/2": {1, 2}, "b/1": {1, 2, 3}, "c/1": {1}}, stored(t, db))
	assert.True(t, compoundUnique(t, db.Collection("issues"), "projectId", "docType", "no"))
	assert.True(t, compoundUnique(t, db.Collection("issues"), "projectId", "code"))

	for name, err := range map[string]error{
		"Insert":     issues.Insert(ctx, &Issue{DocType: 1, Title: "no project"}),
		"InsertMany": issues.InsertMany(ctx, []*Issue{{Project: "a", DocType: 1}, {DocType: 1, Title: "no project"}}),
	} {
		require.ErrorIs(t, err, autokeys.ErrEmptyScope, name)
		assert.ErrorContains(t, err, "*autokeys_test.Issue field No", name)
		assert.ErrorContains(t, err, "scope field Project is empty", name)
	}
	assert.Len(t, mongotest.Docs(t, db.Collection("issues"), bson.D{}), 8, "nothing more was stored")
	in := &Issue{Project: "a", DocType: 1}
	require.NoError(t, issues.Insert(ctx, in))
	assert.Equal(t, int64(3), in.No, "the refused batch used up no number of a/1")
}

// TestScopedNumbersConcurrently: goroutines inserting into two scopes at
// once store, in each, every number from 1 once.
func TestScopedNumbersConcurrently(t *testing.T) {
	issues, _, db := keyed[*Issue](t)
	const workers, each = 8, 12
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				project := []string{"a", "b"}[(w+i)%2]
				if i%3 == 0 {
					assert.NoError(t, issues.InsertMany(ctx, []*Issue{{Project: project, DocType: 1}, {Project: "a", DocType: 1}}))
					continue
				}
				assert.NoError(t, issues.Insert(ctx, &Issue{Project: project, DocType: 1}))
			}
		})
	}
	wg.Wait()
	got := stored(t, db)
	total := 0
	for k, nos := range got {
		want := make([]int64, len(nos))
		for i := range want {
			want[i] = int64(i + 1)
		}
		assert.ElementsMatch(t, want, nos, "scope %s: 1..%d, each once", k, len(nos))
		total += len(nos)
	}
	assert.Equal(t, workers*each+workers*each/3, total)
	assert.Len(t, got, 2)
}

// TestScopedNumbersSurviveProcesses: a scope's numbers given back by Close
// are the next process's; a scope whose data is ahead of its counter
// continues after the data; another scope is not moved.
func TestScopedNumbersSurviveProcesses(t *testing.T) {
	issues, keys, db := keyed[*Issue](t)
	for range 3 {
		require.NoError(t, issues.Insert(ctx, &Issue{Project: "a", DocType: 1}))
	}
	require.NoError(t, keys.Close(ctx))
	_, err := db.Collection("issues").InsertOne(ctx, bson.M{"projectId": "b", "docType": int32(1), "no": int64(40), "code": "I-040"})
	require.NoError(t, err)

	next, _, _ := keyedOn[*Issue](t, db)
	a, b, c := &Issue{Project: "a", DocType: 1}, &Issue{Project: "b", DocType: 1}, &Issue{Project: "c", DocType: 1}
	require.NoError(t, next.InsertMany(ctx, []*Issue{a, b, c}))
	assert.Equal(t, int64(4), a.No, "a continues where the first process closed")
	assert.Equal(t, int64(41), b.No, "b continues after its data")
	assert.Equal(t, int64(1), c.No, "c is not moved by b's data")
}

// TestScopedUpserts: an upsert numbers the document it inserts in the
// scope its filter or update gives; without the scope field it is refused.
func TestScopedUpserts(t *testing.T) {
	issues, _, db := keyed[*Issue](t)
	require.NoError(t, issues.Insert(ctx, &Issue{Project: "a", DocType: 1}))
	up := options.Update().SetUpsert(true)
	_, err := issues.UpdateOne(ctx, bson.M{"projectId": "a", "title": "from the filter"}, bson.M{"$set": bson.M{"docType": int32(1)}}, up)
	require.NoError(t, err)
	_, err = issues.UpdateOne(ctx, bson.M{"title": "from the update"}, bson.M{"$set": bson.M{"projectId": "b", "docType": 7}}, up)
	require.NoError(t, err)
	assert.Equal(t, map[string][]int64{"a/1": {1, 2}, "b/7": {1}}, stored(t, db))

	_, err = issues.UpdateOne(ctx, bson.M{"title": "nowhere"}, bson.M{"$set": bson.M{"docType": int32(1)}}, up)
	require.ErrorIs(t, err, autokeys.ErrEmptyScope)
	assert.ErrorContains(t, err, "scope field Project is empty")
}

// TestScopeIsCheckedAtRegistration: a scope that names no field is refused
// by repo.New.
func TestScopeIsCheckedAtRegistration(t *testing.T) {
	type badScope struct {
		mgm.DefaultModel `bson:",inline"`
		No               int64 `bson:"no" auto:"inc,scope=project"`
	}
	db := srv.Database(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	_, err = repo.New[*badScope](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, `scope=project: the model has no field stored as "project"`)
}
