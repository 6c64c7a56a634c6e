package softdelete_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/mongotest"
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

// TestDeleterIsTheCallers: the softdelete:"by" field records the actor
// of the context the application called with (events.Caller), not of the
// one an interceptor or a listener tracer passed on.
func TestDeleterIsTheCallers(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(softdelete.New(softdelete.WithActor(func(c context.Context) (any, error) { return c.Value(userKey{}), nil })))
	notes, err := repo.New[*Note](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	a, b := &Note{Text: "a"}, &Note{Text: "b"}
	require.NoError(t, notes.InsertMany(ctx, []*Note{a, b}))
	bus.Register(forge{})
	require.NoError(t, notes.Delete(context.WithValue(ctx, userKey{}, "alice"), a))
	_, err = notes.DeleteMany(context.WithValue(ctx, userKey{}, "bob"), bson.D{{Key: "_id", Value: b.ID}})
	require.NoError(t, err)
	for _, c := range []struct {
		note *Note
		by   string
	}{{a, "alice"}, {b, "bob"}} {
		docs := mongotest.Docs(t, db.Collection("notes"), bson.D{{Key: "_id", Value: c.note.ID}})
		require.Len(t, docs, 1)
		assert.Equal(t, c.by, docs[0].Lookup("deletedBy").StringValue(), "the interceptor chose the deleter")
	}
}
