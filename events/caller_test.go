package events_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type accessKeyT struct{}

// access is a caller key, as a policy's switch is: tenancy.AllTenants,
// softdelete.WithDeleted.
var access = events.CallerKey(accessKeyT{})

type actorKey struct{}

// widening is a plugin's interceptor: it passes the operation on with
// every access, as another actor, and with a span of its own.
type widening struct{ wrapper }

func (*widening) Intercept(ctx context.Context, _ *events.Operation, next func(context.Context) error) error {
	ctx = context.WithValue(ctx, access, "all")
	ctx = context.WithValue(ctx, actorKey{}, "mallory")
	return next(context.WithValue(ctx, ctxKey("span"), "op"))
}

// TestInterceptorCannotWidenCallerKeys: the operation runs on the
// interceptor's context, its span included, but the caller keys in it are
// the caller's, and Caller has the caller's values only.
func TestInterceptorCannotWidenCallerKeys(t *testing.T) {
	bus := events.NewBus()
	bus.Register(&widening{})
	call := context.WithValue(context.WithValue(context.Background(), access, "acme"), actorKey{}, "alice")
	ran := false
	require.NoError(t, bus.Intercept(call, insertOp(), func(ctx context.Context) error {
		ran = true
		assert.Equal(t, "op", ctx.Value(ctxKey("span")), "the interceptor's values reach the operation")
		assert.Equal(t, "mallory", ctx.Value(actorKey{}), "a plain key is the interceptor's")
		assert.Equal(t, "acme", ctx.Value(access), "a caller key is the caller's")
		caller := events.Caller(ctx)
		assert.Equal(t, "alice", caller.Value(actorKey{}))
		assert.Equal(t, "acme", caller.Value(access))
		assert.Nil(t, caller.Value(ctxKey("span")))
		assert.Same(t, caller, events.Caller(ctx), "Caller of the operation's context allocates nothing")
		assert.Equal(t, caller, events.Caller(caller))
		return nil
	}))
	assert.True(t, ran)
}

// TestInterceptorCannotWidenNestedOperations: a listener passes the
// context it was given on to a nested operation: what the outer
// interceptor added stays out of its caller keys and of Caller, whether
// interceptors wrap the nested operation too or not; what the listener
// adds (it narrows) counts.
func TestInterceptorCannotWidenNestedOperations(t *testing.T) {
	call := context.WithValue(context.WithValue(context.Background(), access, "acme"), actorKey{}, "alice")
	for _, nestedIntercepted := range []bool{true, false} {
		bus := events.NewBus()
		bus.Register(&widening{}, events.ForModel[*user]())
		if nestedIntercepted {
			bus.Register(&widening{}, events.ForModel[*order]())
		}
		nested := func(ctx context.Context, check func(context.Context)) {
			op := &events.Operation{Method: "Count", ModelType: orderType}
			require.NoError(t, bus.Intercept(ctx, op, func(ctx context.Context) error { check(ctx); return nil }))
		}
		ran := 0
		require.NoError(t, bus.Intercept(call, insertOp(), func(ctx context.Context) error {
			nested(ctx, func(ctx context.Context) { // the listener passes its context on
				ran++
				assert.Equal(t, "acme", ctx.Value(access), "nested intercepted %v", nestedIntercepted)
				assert.Equal(t, "acme", events.Caller(ctx).Value(access))
				assert.Equal(t, "alice", events.Caller(ctx).Value(actorKey{}))
			})
			nested(context.WithValue(ctx, access, "acme-eu"), func(ctx context.Context) { // and narrows
				ran++
				assert.Equal(t, "acme-eu", ctx.Value(access), "nested intercepted %v", nestedIntercepted)
				assert.Equal(t, "acme-eu", events.Caller(ctx).Value(access))
				assert.Equal(t, "alice", events.Caller(ctx).Value(actorKey{}))
				assert.Nil(t, events.Caller(ctx).Value(ctxKey("span")))
				nested(ctx, func(ctx context.Context) { // twice nested
					ran++
					assert.Equal(t, "acme-eu", ctx.Value(access))
					assert.Equal(t, "alice", events.Caller(ctx).Value(actorKey{}))
				})
			})
			return nil
		}))
		assert.Equal(t, 3, ran)
	}
}

// wideningTracer is a plugin's listener tracer that runs each listener
// with every access.
type wideningTracer struct{ wrapper }

func (*wideningTracer) TraceListener(ctx context.Context, _ *events.Event, _ events.Listener) (context.Context, func(error)) {
	return context.WithValue(context.WithValue(ctx, access, "all"), ctxKey("span"), "listener"), nil
}

// TestTracerCannotWidenCallerKeys: a listener runs on the tracer's
// context, its span included, with the caller keys of the context the
// event was published with.
func TestTracerCannotWidenCallerKeys(t *testing.T) {
	bus := events.NewBus()
	bus.Register(&wideningTracer{})
	var seen []any
	bus.Register(events.ListenerFunc(func(ctx context.Context, _ *events.Event) error {
		seen = append(seen, ctx.Value(ctxKey("span")), ctx.Value(access), events.Caller(ctx).Value(access))
		return nil
	}))
	call := context.WithValue(context.Background(), access, "acme")
	require.NoError(t, bus.Publish(call, &events.Event{Type: events.BeforeSave, ModelType: userType}))
	assert.Equal(t, []any{"listener", "acme", "acme"}, seen)
}

// TestCallerWithoutInterceptors: outside interceptors, Caller returns its
// context, and a caller key is a key like any.
func TestCallerWithoutInterceptors(t *testing.T) {
	ctx := context.WithValue(context.Background(), access, "acme")
	assert.Equal(t, ctx, events.Caller(ctx))
	assert.Equal(t, "acme", ctx.Value(access))
	assert.Nil(t, ctx.Value(accessKeyT{}), "the caller key is not the key it was made of")
	assert.Equal(t, access, events.CallerKey(accessKeyT{}), "the same key makes the same caller key")
	assert.Equal(t, []int(nil), events.CallerKey([]int(nil)), "a key that is not comparable is returned as is")
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = events.Caller(ctx).Value(access) }))
}

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
