package events_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wrapper is an interceptor that handles no events and logs what it sees.
type wrapper struct {
	name   string
	log    *[]string
	before error // returned instead of calling next
	after  func(err error) error
	panics bool
}

func (w *wrapper) HandleEvent(context.Context, *events.Event) error { return nil }
func (w *wrapper) EventTypes() []events.Type                        { return nil }

func (w *wrapper) Intercept(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
	*w.log = append(*w.log, w.name+" begins "+o.Method)
	if w.panics {
		panic("interceptor boom")
	}
	if w.before != nil {
		return w.before
	}
	err := next(context.WithValue(ctx, ctxKey(w.name), true))
	*w.log = append(*w.log, fmt.Sprintf("%s ends %s: %v", w.name, o.Method, err))
	if w.after != nil {
		return w.after(err)
	}
	return err
}

type ctxKey string

func insertOp() *events.Operation {
	return &events.Operation{Method: "Insert", Op: events.OpInsert, Collection: "users", ModelType: userType}
}

// TestInterceptorsWrapInOrder: interceptors run outermost first, by Order
// and then registration, each on the context the one outside it passed,
// and they see the operation's error.
func TestInterceptorsWrapInOrder(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(&wrapper{name: "b", log: &log})
	bus.Register(&wrapper{name: "a", log: &log}, events.Order(-1))
	bus.Register(&wrapper{name: "orders", log: &log}, events.ForModel[*order]())
	bus.Register(&wrapper{name: "c", log: &log})
	assert.True(t, bus.Intercepts(userType))
	err := bus.Intercept(context.Background(), insertOp(), func(ctx context.Context) error {
		log = append(log, fmt.Sprintf("op sees a=%v b=%v c=%v", ctx.Value(ctxKey("a")), ctx.Value(ctxKey("b")), ctx.Value(ctxKey("c"))))
		return errNope
	})
	assert.ErrorIs(t, err, errNope)
	assert.Equal(t, []string{"a begins Insert", "b begins Insert", "c begins Insert", "op sees a=true b=true c=true",
		"c ends Insert: nope", "b ends Insert: nope", "a ends Insert: nope"}, log)
	log = nil
	require.NoError(t, bus.Intercept(context.Background(), &events.Operation{Method: "Insert", ModelType: orderType}, func(context.Context) error { return nil }))
	assert.Equal(t, []string{"a begins Insert", "b begins Insert", "orders begins Insert", "c begins Insert",
		"c ends Insert: <nil>", "orders ends Insert: <nil>", "b ends Insert: <nil>", "a ends Insert: <nil>"}, log)
}

// TestNoInterceptors: without interceptors for the model, Intercepts is
// false, and Intercept just runs the operation.
func TestNoInterceptors(t *testing.T) {
	var nilBus *events.Bus
	assert.False(t, nilBus.Intercepts(userType))
	bus := events.NewBus()
	var log []string
	bus.Register(record(&log, "plain"))
	assert.False(t, bus.Intercepts(userType), "a plain listener is no interceptor")
	stop := bus.Register(&wrapper{name: "orders", log: &log}, events.ForModel[*order]())
	assert.False(t, bus.Intercepts(userType))
	assert.True(t, bus.Intercepts(orderType))
	ran := false
	require.NoError(t, bus.Intercept(context.Background(), insertOp(), func(context.Context) error { ran = true; return nil }))
	assert.True(t, ran)
	assert.True(t, stop())
	assert.False(t, bus.Intercepts(orderType), "unregistering removes the interceptor")
	assert.Equal(t, 1, bus.Len())

	bus.Register(&wrapper{name: "all", log: &log})
	ran = false
	require.NoError(t, bus.Intercept(context.Background(), nil, func(context.Context) error { ran = true; return nil }))
	assert.True(t, ran, "without an Operation, the operation just runs")
	assert.Empty(t, log)
}

// TestInterceptorCannotHideFailure: an interceptor may fail an operation,
// but a nil error does not hide one that failed or never ran.
func TestInterceptorCannotHideFailure(t *testing.T) {
	ctx := context.Background()
	var log []string
	bus := events.NewBus()
	bus.Register(&wrapper{name: "liar", log: &log, after: func(error) error { return nil }})
	assert.ErrorIs(t, bus.Intercept(ctx, insertOp(), func(context.Context) error { return errNope }), errNope)

	bus = events.NewBus()
	bus.Register(&wrapper{name: "refuses", log: &log, before: errNope})
	ran := false
	assert.ErrorIs(t, bus.Intercept(ctx, insertOp(), func(context.Context) error { ran = true; return nil }), errNope)
	assert.False(t, ran)

	bus = events.NewBus()
	bus.Register(&skipper{})
	err := bus.Intercept(ctx, insertOp(), func(context.Context) error { ran = true; return nil })
	assert.EqualError(t, err, `events: interceptor *events_test.skipper returned without running Insert of *events_test.user in collection "users", and without an error`)
	assert.False(t, ran)
}

type skipper struct{ wrapper }

func (*skipper) Intercept(context.Context, *events.Operation, func(context.Context) error) error {
	return nil
}

// TestInterceptorPanics: an interceptor's panic becomes an error; the
// operation's own panic is not the interceptor's, and goes on.
func TestInterceptorPanics(t *testing.T) {
	var log []string
	bus := events.NewBus()
	bus.Register(&wrapper{name: "w", log: &log, panics: true})
	err := bus.Intercept(context.Background(), insertOp(), func(context.Context) error { return nil })
	assert.ErrorIs(t, err, events.ErrPanic)
	assert.Contains(t, err.Error(), "interceptor *events_test.wrapper of Insert")

	bus = events.NewBus()
	bus.Register(&wrapper{name: "w", log: &log})
	assert.PanicsWithValue(t, "op boom", func() {
		_ = bus.Intercept(context.Background(), insertOp(), func(context.Context) error { panic("op boom") })
	})
}

// tracer records the listeners it is asked to trace.
type tracer struct {
	wrapper
	log *[]string
}

func (tr *tracer) TraceListener(ctx context.Context, e *events.Event, l events.Listener) (context.Context, func(error)) {
	start := time.Now()
	*tr.log = append(*tr.log, "start "+e.Type.String())
	return context.WithValue(ctx, ctxKey("span"), e.Type.String()), func(err error) {
		*tr.log = append(*tr.log, fmt.Sprintf("end %v %v, timed %v", e.Type, err, time.Since(start) > 0))
	}
}

// TestListenerTracer: with a tracer registered, each listener runs on the
// context TraceListener returned and end gets its error; tracers of other
// models are not asked.
func TestListenerTracer(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		log = append(log, fmt.Sprintf("listener in %v", ctx.Value(ctxKey("span"))))
		if e.Type == events.BeforeSave {
			return errNope
		}
		return nil
	}))
	bus.Register(&tracer{log: &log})
	bus.Register(&tracer{log: new([]string)}, events.ForModel[*order]())
	ctx := context.Background()
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.BeforeConvert, ModelType: userType}))
	assert.ErrorIs(t, bus.Publish(ctx, &events.Event{Type: events.BeforeSave, ModelType: userType}), errNope)
	assert.Equal(t, []string{
		"start BeforeConvert", "listener in BeforeConvert", "end BeforeConvert <nil>, timed true",
		"start BeforeSave", "listener in BeforeSave", "end BeforeSave nope, timed true"}, log)
}

// TestListenerErrorNamesListener: a veto names the listener that vetoed,
// whether it failed in HandleEvent or a policy's Check.
func TestListenerErrorNamesListener(t *testing.T) {
	bus := events.NewBus()
	veto := events.ListenerFunc(func(context.Context, *events.Event) error { return errNope })
	bus.Register(veto)
	var le *events.ListenerError
	require.ErrorAs(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave}), &le)
	assert.Equal(t, fmt.Sprintf("%p", veto), fmt.Sprintf("%p", le.Listener))

	bus = events.NewBus()
	p := &checking{err: errNope}
	bus.Register(p)
	require.ErrorAs(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeQuery}), &le)
	assert.Same(t, p, le.Listener)
	assert.True(t, errors.Is(le, events.ErrAborted))
}

type checking struct{ err error }

func (*checking) HandleEvent(context.Context, *events.Event) error { return nil }
func (*checking) EnforcesPolicy()                                  {}
func (c *checking) Check(context.Context, *events.Event) error     { return c.err }

// TestInterceptorPassesNilContext: an interceptor that passes next a nil
// context fails the operation, which does not run.
func TestInterceptorPassesNilContext(t *testing.T) {
	bus := events.NewBus()
	bus.Register(&nilPasser{})
	ran := false
	err := bus.Intercept(context.Background(), insertOp(), func(context.Context) error { ran = true; return nil })
	assert.EqualError(t, err, "events: interceptor *events_test.nilPasser passed a nil context to next, for Insert of *events_test.user")
	assert.False(t, ran)
}

type nilPasser struct{ wrapper }

func (*nilPasser) Intercept(_ context.Context, _ *events.Operation, next func(context.Context) error) error {
	return next(nil)
}
