package repo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestAggregateAndWatchRefuseCustomOptions: the raw command fields of an
// Aggregate's or a Watch's options (Custom, CustomPipeline), which the
// driver copies into the command unread, would carry a collation, a read
// concern at a past cluster time or a second, unconfined pipeline past
// the policies. They are refused, naming the method and the option, on a
// model under the policies and on a plain one, with events on and off,
// and no aggregate command is sent.
func TestAggregateAndWatchRefuseCustomOptions(t *testing.T) {
	var mu sync.Mutex
	aggregates := 0
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "aggregate" {
			mu.Lock()
			aggregates++
			mu.Unlock()
		}
	}}
	bus, stored, _ := watched(t)
	client, err := srv.Client(ctx, options.Client().SetMonitor(mon))
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	db := client.Database(stored.Collection().Database().Name())
	memos, err := repo.New[*watchedMemo](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	plains, err := repo.New[*plain](events.NewBus(), repo.WithDatabase(db))
	require.NoError(t, err)

	past := primitive.Timestamp{T: uint32(time.Now().Add(-time.Minute).Unix())}
	customs := map[string]bson.M{
		"collation":   {"collation": bson.M{"locale": "en", "strength": 2}},
		"readConcern": {"readConcern": bson.M{"level": "snapshot", "atClusterTime": past}},
		"pipeline":    {"pipeline": bson.A{}},
		"empty":       {},
	}
	acme := tenancy.WithTenant(ctx, "acme")
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"events", acme}, {"WithoutEvents", events.WithoutEvents(acme)}} {
		for name, custom := range customs {
			var out []bson.M
			err := memos.Aggregate(c.ctx, nil, &out, options.Aggregate(), options.Aggregate().SetCustom(custom))
			assert.ErrorIs(t, err, repo.ErrInvalidArgument, "%s %s", c.name, name)
			assert.ErrorContains(t, err, ": Aggregate: options 1: Custom", "%s %s", c.name, name)
			err = plains.Aggregate(c.ctx, nil, &out, options.Aggregate().SetCustom(custom))
			assert.ErrorIs(t, err, repo.ErrInvalidArgument, "plain %s %s", c.name, name)

			_, err = memos.Watch(c.ctx, nil, options.ChangeStream().SetCustom(custom))
			assert.ErrorIs(t, err, repo.ErrInvalidArgument, "%s %s", c.name, name)
			assert.ErrorContains(t, err, ": Watch: options 0: Custom", "%s %s", c.name, name)
			_, err = memos.Watch(c.ctx, nil, options.ChangeStream().SetCustomPipeline(custom))
			assert.ErrorIs(t, err, repo.ErrInvalidArgument, "%s %s", c.name, name)
			assert.ErrorContains(t, err, ": Watch: options 0: CustomPipeline", "%s %s", c.name, name)
			_, err = plains.Watch(c.ctx, nil, options.ChangeStream().SetCustomPipeline(custom))
			assert.ErrorIs(t, err, repo.ErrInvalidArgument, "plain %s %s", c.name, name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, aggregates, "an aggregate command was sent")
}
