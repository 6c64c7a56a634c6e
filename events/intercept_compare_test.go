package events_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// valuesCtx is an application's context of a type that == cannot compare
// (it holds a map), passed by value.
type valuesCtx struct {
	context.Context
	vals map[string]string
}

// idleTracer traces nothing: it returns the context it was given, as
// tracing.Tracing does outside a recording span.
type idleTracer struct{ wrapper }

func (*idleTracer) TraceListener(ctx context.Context, _ *events.Event, _ events.Listener) (context.Context, func(error)) {
	return ctx, nil
}

// TestTracerReturnsContextOfAnyType: a tracer that returns the context it
// was given leaves the listener to run on it, whatever its type; events
// published outside interceptors (a Cursor's AfterLoad) carry the
// application's own context.
func TestTracerReturnsContextOfAnyType(t *testing.T) {
	bus := events.NewBus()
	bus.Register(&idleTracer{})
	var seen []any
	bus.Register(events.ListenerFunc(func(ctx context.Context, _ *events.Event) error {
		seen = append(seen, ctx.Value(ctxKey("user")))
		return nil
	}))
	ctx := valuesCtx{Context: context.WithValue(context.Background(), ctxKey("user"), "ann"), vals: map[string]string{}}
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterLoad, ModelType: userType}))
	assert.Equal(t, []any{"ann"}, seen)
}
