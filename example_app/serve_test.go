package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestMain lets the test binary be its own server process, as
// example_app is when run with -server-process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(serveMain(os.Args[2:], os.Stdout))
	}
	os.Exit(m.Run())
}

// TestServerProcess: -server-process runs the embedded server in another
// process, which serves until stopped, and is gone then, with its data.
func TestServerProcess(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	uri, stop, err := startProcess(ctx, "")
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(uri))
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

	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the server's data directory")
	stop()
	stopped = true
	entries, err = os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the server's data directory is removed")
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	gone, err := mongo.Connect(pctx, options.Client().ApplyURI(uri).SetServerSelectionTimeout(time.Second))
	require.NoError(t, err)
	defer gone.Disconnect(ctx)
	assert.Error(t, gone.Ping(pctx, nil), "the server process has stopped")
}
