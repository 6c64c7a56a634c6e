package mongotest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestServerRunsInAnotherProcess: the embedded server is a child process,
// which serves until Close, and is gone then, with its temporary data.
func TestServerRunsInAnotherProcess(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s, err := mongotest.NewServer(ctx, mongotest.IgnoreEnv())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, tmp, filepath.Dir(s.Dir()), "the data directory is a temporary one")
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(s.URI))
	require.NoError(t, err)
	defer client.Disconnect(ctx)
	var status struct {
		PID int64 `bson:"pid"`
	}
	require.NoError(t, client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status))
	assert.NotZero(t, status.PID)
	assert.NotEqual(t, int64(os.Getpid()), status.PID, "the server runs in another process")
	_, err = client.Database("serve_test").Collection("c").InsertOne(ctx, bson.M{"a": 1})
	require.NoError(t, err)

	require.NoError(t, s.Close())
	_, err = os.Stat(s.Dir())
	assert.ErrorIs(t, err, os.ErrNotExist, "the server's data directory is removed")
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	gone, err := mongo.Connect(pctx, options.Client().ApplyURI(s.URI).SetServerSelectionTimeout(time.Second))
	require.NoError(t, err)
	defer gone.Disconnect(ctx)
	assert.Error(t, gone.Ping(pctx, nil), "the server process has stopped")
}
