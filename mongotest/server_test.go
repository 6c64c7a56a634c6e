package mongotest_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func TestDataDirSurvivesRestart(t *testing.T) {
	if os.Getenv(mongotest.EnvURI) != "" {
		t.Skip("the data directory is the embedded server's; " + mongotest.EnvURI + " is set")
	}
	ctx := context.Background()
	dir := t.TempDir()
	for i, want := range []int64{1, 2} {
		s, err := mongotest.NewServer(ctx, mongotest.WithDataDir(dir))
		require.NoError(t, err)
		assert.True(t, s.Embedded)
		assert.NotEmpty(t, s.Info().FerretDB, "buildInfo names FerretDB")
		client, err := s.Client(ctx)
		require.NoError(t, err)
		coll := client.Database("keep").Collection("runs")
		_, err = coll.InsertOne(ctx, bson.M{"run": i})
		require.NoError(t, err)
		n, err := coll.CountDocuments(ctx, bson.M{})
		require.NoError(t, err)
		assert.Equal(t, want, n, "run %d sees the runs before it", i)
		require.NoError(t, client.Disconnect(ctx))
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "closing twice is harmless")
	}
}

func TestEnvURIIsUsed(t *testing.T) {
	t.Setenv(mongotest.EnvURI, "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200&connectTimeoutMS=200")
	_, err := mongotest.NewServer(context.Background())
	require.Error(t, err, "MONGODB_URI wins over the embedded server")
	assert.ErrorContains(t, err, mongotest.EnvURI)
}

func TestRequireSkipsWithReason(t *testing.T) {
	s := mongotest.Start(t, mongotest.IgnoreEnv())
	ran := false
	t.Run("transactions", func(t *testing.T) {
		s.Require(t, "transactions")
		ran = true
	})
	assert.False(t, ran, "the embedded server has no transactions, so the subtest skipped")
}

// TestDatabaseIsAtomic races goroutines on one counter with
// findOneAndUpdate $inc: through Database every result is distinct, on the
// embedded server too (FerretDB is atomic per connection, and there is
// one).
func TestDatabaseIsAtomic(t *testing.T) {
	const goroutines, each = 8, 20
	ctx := context.Background()
	s := mongotest.Start(t)
	coll := s.Database(t).Collection("counters")
	_, err := coll.InsertOne(ctx, bson.M{"_id": "c", "seq": 0})
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				var doc struct{ Seq int64 }
				err := coll.FindOneAndUpdate(ctx, bson.M{"_id": "c"}, bson.M{"$inc": bson.M{"seq": 1}},
					options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				seen[doc.Seq] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Len(t, seen, goroutines*each, "every $inc returned its own value")
}
