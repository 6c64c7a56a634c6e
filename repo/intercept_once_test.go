package repo_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// rerun is an interceptor that calls next twice.
type rerun struct{}

func (rerun) HandleEvent(context.Context, *events.Event) error { return nil }
func (rerun) EventTypes() []events.Type                        { return nil }
func (rerun) Intercept(ctx context.Context, _ *events.Operation, next func(context.Context) error) error {
	_ = next(ctx)
	return next(ctx)
}

// TestInterceptorRunsUpdateOnce: an interceptor that calls next twice runs
// an UpdateOne once: the version moves by 1, the caller's $inc applies
// once, and the second call's error (events.ErrNextAgain) is returned.
func TestInterceptorRunsUpdateOnce(t *testing.T) {
	tickets, bus, db := keyedTickets(t)
	tk := &ticket{Title: "t"}
	require.NoError(t, tickets.Insert(ctx, tk))
	bus.Register(rerun{})
	id := bson.D{{Key: "_id", Value: tk.ID}}
	_, err := tickets.UpdateOne(ctx, id, bson.D{{Key: "$inc", Value: bson.D{{Key: "runs", Value: 1}}}})
	require.ErrorIs(t, err, events.ErrNextAgain)
	doc := mongotest.Docs(t, db.Collection("tickets"), id)[0]
	assert.EqualValues(t, tk.Version+1, doc.Lookup("version").AsInt64(), "one UpdateOne moved the version by more than 1: %v", doc)
	assert.EqualValues(t, 1, doc.Lookup("runs").AsInt64(), "the caller's $inc ran more than once: %v", doc)
}
