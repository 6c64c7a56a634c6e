package events_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestAddExtraMergesOperators: listeners add to one operator each, and
// what Additions returned before is never changed by a later addition.
func TestAddExtraMergesOperators(t *testing.T) {
	e := &events.Event{Type: events.BeforeDelete}
	e.AddExtra("$set", "a", 1)
	before := e.Additions().Extra
	e.AddExtra("$set", "b", 2)
	e.AddExtra("$inc", "n", 1)
	e.AddExtra("$set", "c", 3)
	assert.Equal(t, bson.D{
		{Key: "$set", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 2}, {Key: "c", Value: 3}}},
		{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}},
	}, e.Additions().Extra)
	assert.Equal(t, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}, before, "unchanged")

	e.AddTombstone("$set", "gone", true)
	assert.Equal(t, bson.D{{Key: "$set", Value: bson.D{{Key: "gone", Value: true}}}}, e.Additions().Tombstone)
	full := errors.New("full")
	e.AddGuard(bson.E{Key: "n", Value: bson.D{{Key: "$lt", Value: 5}}}, full)
	require.Len(t, e.Additions().Guards, 1)
	assert.Equal(t, full, e.Additions().Guards[0].Err)
	e.Keep("_side")
	assert.Equal(t, []string{"_side"}, e.Additions().Keep)
}

// TestAdditionMistakesFailTheListener: an addition that cannot mean
// anything fails the call of the listener that made it, naming the
// mistake, and adds nothing; the next listener is not blamed for it.
func TestAdditionMistakesFailTheListener(t *testing.T) {
	for name, c := range map[string]struct {
		typ  events.Type
		add  func(e *events.Event)
		want string
	}{
		"after the write":        {events.AfterSave, func(e *events.Event) { e.AddExtra("$set", "x", 1) }, "AddExtra on AfterSave"},
		"no operator":            {events.BeforeSave, func(e *events.Event) { e.AddExtra("set", "x", 1) }, `AddExtra("set", "x")`},
		"no path":                {events.BeforeUpdate, func(e *events.Event) { e.AddExtra("$set", "", 1) }, `AddExtra("$set", "")`},
		"a tombstone of a write": {events.BeforeSave, func(e *events.Event) { e.AddTombstone("$set", "gone", true) }, "AddTombstone on BeforeSave"},
		"a guard without error":  {events.BeforeSave, func(e *events.Event) { e.AddGuard(bson.E{Key: "x", Value: 1}, nil) }, "AddGuard"},
		"a guard without field":  {events.BeforeSave, func(e *events.Event) { e.AddGuard(bson.E{}, errors.New("no")) }, "AddGuard"},
		"keep a path":            {events.BeforeSave, func(e *events.Event) { e.Keep("a.b") }, `Keep("a.b")`},
		"keep the _id":           {events.BeforeSave, func(e *events.Event) { e.Keep("_id") }, `Keep("_id")`},
		"keep an operator":       {events.BeforeSave, func(e *events.Event) { e.Keep("$x") }, `Keep("$x")`},
	} {
		t.Run(name, func(t *testing.T) {
			bus := events.NewBus()
			bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
				c.add(e)
				return nil
			}))
			e := &events.Event{Type: c.typ, Op: events.OpReplace}
			err := bus.Publish(context.Background(), e)
			var le *events.ListenerError
			require.ErrorAs(t, err, &le)
			assert.ErrorContains(t, err, c.want)
			assert.Equal(t, events.Additions{}, e.Additions(), "nothing added")
			next := events.NewBus()
			next.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }))
			assert.NoError(t, next.Publish(context.Background(), e), "the mistake is not left for the next listener")
		})
	}
}

// TestBeforeConvertStartsAfresh: what listeners added to an earlier
// attempt of a write is gone when the next begins.
func TestBeforeConvertStartsAfresh(t *testing.T) {
	e := &events.Event{Type: events.BeforeSave, Op: events.OpReplace}
	e.AddExtra("$set", "_n", 1)
	e.AddGuard(bson.E{Key: "_n", Value: 1}, errors.New("no"))
	e.Keep("_side")
	e.Type = events.BeforeConvert
	require.NoError(t, (*events.Bus)(nil).Publish(context.Background(), e))
	assert.Equal(t, events.Additions{}, e.Additions())
}

// addingCheck is a policy whose Check makes an addition.
type addingCheck struct{ check func(e *events.Event) }

func (addingCheck) EnforcesPolicy()                                  {}
func (addingCheck) HandleEvent(context.Context, *events.Event) error { return nil }

func (c addingCheck) Check(_ context.Context, e *events.Event) error {
	c.check(e)
	return nil
}

// TestCheckMistakeFailsTheCheck: a Check's meaningless addition fails
// that policy's Check, and is not left for the next listener's call.
func TestCheckMistakeFailsTheCheck(t *testing.T) {
	bus := events.NewBus()
	p := &addingCheck{func(e *events.Event) { e.AddGuard(bson.E{Key: "x", Value: 1}, nil) }}
	bus.Register(p)
	e := &events.Event{Type: events.BeforeSave}
	err := bus.Publish(context.Background(), e)
	var le *events.ListenerError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, p, le.Listener)
	assert.ErrorContains(t, err, "AddGuard")
	next := events.NewBus()
	next.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }))
	assert.NoError(t, next.Publish(context.Background(), e))
}
