package events_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypedFuncFiltersItsModel: a TypedFunc registered without ForModel
// sees its own model's events only, so a function that reads its model
// never gets another model's zero T, panics, and aborts the writes of
// every other repository on the bus.
func TestTypedFuncFiltersItsModel(t *testing.T) {
	bus := events.NewBus()
	var names []string
	bus.Register(events.TypedFunc(func(_ context.Context, _ *events.Event, u *user) error {
		names = append(names, u.Name) // panics on a nil *user
		return nil
	}))
	ctx := context.Background()
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.BeforeSave, ModelType: orderType, Model: &order{No: 1}}),
		"an order's event does not reach the users' function")
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.BeforeSave, ModelType: userType, Model: &user{Name: "zwt"}}))
	assert.Equal(t, []string{"zwt"}, names)
	assert.False(t, bus.Handles(events.BeforeSave, orderType), "the bus knows it is the users' listener")
	assert.True(t, bus.Handles(events.BeforeSave, userType))

	// T an interface: every model that implements it.
	var seen []string
	bus.Register(events.TypedFunc(func(_ context.Context, e *events.Event, s interface{ Named() string }) error {
		seen = append(seen, s.Named())
		return nil
	}))
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterSave, ModelType: orderType, Model: &order{No: 2}}))
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterSave, ModelType: namedType, Model: &named{N: "n"}}))
	assert.Equal(t, []string{"n"}, seen)
}

type named struct{ N string }

func (n *named) Named() string { return n.N }

var namedType = reflect.TypeFor[*named]()
