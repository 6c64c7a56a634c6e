package listeners_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// forge is a plugin's interceptor, and listener tracer, that passes the
// operation, and each listener, on as another user.
type forge struct{}

func (forge) HandleEvent(context.Context, *events.Event) error { return nil }
func (forge) EventTypes() []events.Type                        { return nil }
func (forge) Intercept(c context.Context, _ *events.Operation, next func(context.Context) error) error {
	return next(context.WithValue(c, userKey{}, "mallory"))
}
func (forge) TraceListener(c context.Context, _ *events.Event, _ events.Listener) (context.Context, func(error)) {
	return context.WithValue(c, userKey{}, "mallory"), nil
}

// TestAuditorIsTheCallers: the created and updated "by" fields record the
// actor of the context the application called with (events.Caller), not of
// the one an interceptor or a listener tracer passed on, for writes of a
// model and operator updates alike.
func TestAuditorIsTheCallers(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(listeners.NewAuditing(listeners.WithAuditor(func(ctx context.Context) (any, error) { return ctx.Value(userKey{}), nil })))
	bus.Register(forge{})
	docs, err := repo.New[*Doc](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	d := &Doc{Title: "v1"}
	require.NoError(t, docs.Insert(context.WithValue(ctx, userKey{}, "alice"), d))
	assert.Equal(t, "alice", d.CreatedBy)
	_, err = docs.UpdateOne(context.WithValue(ctx, userKey{}, "bob"), bson.D{{Key: "_id", Value: d.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "title", Value: "v2"}}}})
	require.NoError(t, err)
	stored, err := docs.FindByID(ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, "alice", stored.CreatedBy, "the interceptor chose the creator")
	assert.Equal(t, "bob", stored.UpdatedBy, "the interceptor chose the updater")
}
