package events_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextTwice is an interceptor that runs the operation twice.
type nextTwice struct{ first error }

func (*nextTwice) HandleEvent(context.Context, *events.Event) error { return nil }
func (*nextTwice) EventTypes() []events.Type                        { return nil }
func (n *nextTwice) Intercept(ctx context.Context, _ *events.Operation, next func(context.Context) error) error {
	n.first = next(ctx)
	return next(ctx)
}

// TestInterceptNextRunsOnce: next runs the operation once; called again,
// by the interceptor or one outside it, it returns ErrNextAgain, naming
// the interceptor and the operation, without running it.
func TestInterceptNextRunsOnce(t *testing.T) {
	for _, outer := range []bool{false, true} {
		bus := events.NewBus()
		twice := &nextTwice{}
		bus.Register(twice)
		if outer { // another interceptor inside the one that calls twice
			bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }))
			bus.Register(&passOn{})
		}
		runs := 0
		err := bus.Intercept(context.Background(), &events.Operation{Method: "UpdateOne", ModelType: userType, Collection: "users"},
			func(context.Context) error { runs++; return nil })
		assert.Equal(t, 1, runs)
		require.NoError(t, twice.first)
		require.ErrorIs(t, err, events.ErrNextAgain)
		assert.ErrorContains(t, err, "UpdateOne")
	}
}

// passOn is an interceptor that calls next once.
type passOn struct{}

func (*passOn) HandleEvent(context.Context, *events.Event) error { return nil }
func (*passOn) EventTypes() []events.Type                        { return nil }
func (*passOn) Intercept(ctx context.Context, _ *events.Operation, next func(context.Context) error) error {
	return next(ctx)
}
