package listeners_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// slowRecords returns the slow-operation records in buf.
func slowRecords(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		if r["msg"] == "mgmevents slow operation" {
			out = append(out, r)
		}
	}
	buf.Reset()
	return out
}

// TestLoggingSlowOperations: an operation slower than WithSlow's threshold
// is logged at Warn with its method, collection, model, duration and what
// failed, whatever WithLevel says (here Debug, below the handler's Warn);
// a faster one is not; the error's text, which quotes values, only with
// WithDocuments.
func TestLoggingSlowOperations(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db := srv.Database(t)
	_, err := db.Collection("people").Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(listeners.NewLogging(logger, listeners.WithSlow(time.Nanosecond))) // every operation is slow
	people, err := repo.New[*Person](bus, repo.WithDatabase(db))
	require.NoError(t, err)

	require.NoError(t, people.Insert(ctx, &Person{Email: "a@example.com"}))
	_, err = people.Count(ctx, bson.D{})
	require.NoError(t, err)
	rs := slowRecords(t, &buf)
	require.Len(t, rs, 2, "only the slow records: the events' are at Debug")
	for i, method := range []string{"Insert", "Count"} {
		r := rs[i]
		assert.Equal(t, "WARN", r["level"])
		assert.Equal(t, method, r["method"])
		assert.Equal(t, "people", r["collection"])
		assert.Equal(t, "*listeners_test.Person", r["model"])
		assert.Positive(t, r["duration"])
		assert.NotContains(t, r, "error")
	}

	err = people.Insert(ctx, &Person{Email: "a@example.com"})
	require.Error(t, err)
	rs = slowRecords(t, &buf)
	require.Len(t, rs, 1)
	assert.Equal(t, "duplicate_key", rs[0]["error.type"])
	assert.Contains(t, rs[0]["error"], "server error 11000")
	_, err = people.FindByID(ctx, "a@example.com") // not an ObjectID
	require.ErrorContains(t, err, "a@example.com", "the error quotes the value")
	rs = slowRecords(t, &buf)
	require.Len(t, rs, 1)
	assert.Equal(t, "invalid_argument", rs[0]["error.type"])
	record, _ := json.Marshal(rs[0])
	assert.NotContains(t, string(record), "a@example.com", "no value without WithDocuments")

	bus = events.NewBus()
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return errors.New("no") }), events.On(events.BeforeQuery))
	bus.Register(listeners.NewLogging(logger, listeners.WithSlow(time.Nanosecond), listeners.WithDocuments()))
	people, err = repo.New[*Person](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = people.FindOne(ctx, bson.D{})
	require.Error(t, err)
	rs = slowRecords(t, &buf)
	require.Len(t, rs, 1)
	assert.Equal(t, "vetoed", rs[0]["error.type"])
	assert.Equal(t, err.Error(), rs[0]["error"], "the error's text with WithDocuments")

	bus = events.NewBus()
	bus.Register(listeners.NewLogging(logger, listeners.WithSlow(time.Hour)))
	people, err = repo.New[*Person](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, people.Insert(ctx, &Person{Email: "b@example.com"}))
	assert.Empty(t, slowRecords(t, &buf), "faster than the threshold")
}

// TestLoggingWithoutSlowWrapsNothing: without WithSlow, Logging is no
// interceptor, so operations pay nothing for it.
func TestLoggingWithoutSlowWrapsNothing(t *testing.T) {
	bus := events.NewBus()
	bus.Register(listeners.NewLogging(nil))
	assert.False(t, bus.Intercepts(reflect.TypeFor[*Person]()))
	bus.Register(listeners.NewLogging(nil, listeners.WithSlow(time.Second)))
	assert.True(t, bus.Intercepts(reflect.TypeFor[*Person]()))
}
