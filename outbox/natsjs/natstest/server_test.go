package natstest_test

import (
	"context"
	"os"
	"testing"

	"github.com/mgmevents/mgmevents/outbox/natsjs/natstest"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDataDirSurvivesRestart keeps a stream and its messages across a
// restart on the same directory, and removes only a directory it made.
func TestDataDirSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srv := natstest.Start(t, natstest.WithDataDir(dir))
	js := srv.TestJetStream(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "s.one", []byte("kept"))
	require.NoError(t, err)
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "a second Close does nothing")
	_, err = os.Stat(dir)
	require.NoError(t, err, "a directory given by WithDataDir stays")

	again := natstest.Start(t, natstest.WithDataDir(dir))
	s, err := again.TestJetStream(t).Stream(ctx, "S")
	require.NoError(t, err)
	got, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, "kept", string(got.Data))
}

// TestNewServerRemovesItsDir removes the temporary directory it made.
func TestNewServerRemovesItsDir(t *testing.T) {
	srv, err := natstest.NewServer()
	require.NoError(t, err)
	dir := srv.Dir()
	_, err = os.Stat(dir)
	require.NoError(t, err)
	assert.Regexp(t, `^nats://127\.0\.0\.1:\d+$`, srv.URL)
	require.NoError(t, srv.Close())
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the temporary directory is gone: %v", err)
}
