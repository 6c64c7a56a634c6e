package events_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
)

// later is a Deferred listener of the test's own: it records what
// registration asked of it, and accepts every type it is asked for.
type later struct {
	events.ListenerFunc
	asked  []events.Type
	policy bool
}

func (l *later) Accept(types []events.Type, policy bool) []events.Type {
	l.asked, l.policy = types, policy
	return types
}

// TestDeferredIsNeverBeforeNorPolicy: the bus, not the listener, keeps a
// Deferred listener off Before* events and out of the policies, whatever
// On, AsPolicy and Accept say.
func TestDeferredIsNeverBeforeNorPolicy(t *testing.T) {
	var got []events.Type
	l := &later{ListenerFunc: func(_ context.Context, e *events.Event) error {
		got = append(got, e.Type)
		return nil
	}}
	bus := events.NewBus()
	unregister := bus.Register(l, events.On(events.BeforeSave, events.AfterSave), events.AsPolicy())
	assert.Equal(t, []events.Type{events.BeforeSave, events.AfterSave}, l.asked)
	assert.True(t, l.policy)

	for _, typ := range []events.Type{events.BeforeSave, events.AfterSave} {
		assert.NoError(t, bus.Publish(context.Background(), &events.Event{Type: typ, ModelType: userType}))
	}
	assert.Equal(t, []events.Type{events.AfterSave}, got)
	assert.False(t, bus.Handles(events.BeforeSave, userType))
	regs := bus.Listeners(userType)
	assert.Len(t, regs, 1)
	assert.False(t, regs[0].Policy, "not a policy")
	assert.True(t, unregister(), "so it can be removed")
}
