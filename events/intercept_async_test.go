package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goNext is an interceptor that calls next on another goroutine, after
// start is closed, and returns without waiting for it to return (after
// started is closed, when not nil); next's error goes to res.
type goNext struct {
	start, started chan struct{}
	res            chan error
}

func (*goNext) HandleEvent(context.Context, *events.Event) error { return nil }
func (*goNext) EventTypes() []events.Type                        { return nil }
func (g *goNext) Intercept(ctx context.Context, _ *events.Operation, next func(context.Context) error) error {
	go func() {
		<-g.start
		g.res <- next(ctx)
	}()
	if g.started != nil {
		<-g.started
	}
	return nil
}

// TestInterceptNextOnAnotherGoroutine (run with -race): an interceptor
// that calls next on a goroutine of its own and returns does not race with
// the chain. Intercept waits for an operation so started and returns its
// error; an operation whose next comes after the interceptors returned
// never runs, and Intercept says it did not.
func TestInterceptNextOnAnotherGoroutine(t *testing.T) {
	bus := events.NewBus()
	g := &goNext{start: make(chan struct{}), started: make(chan struct{}), res: make(chan error, 1)}
	bus.Register(&passOn{})
	bus.Register(g)
	close(g.start)
	var ran atomic.Bool
	err := bus.Intercept(context.Background(), insertOp(), func(context.Context) error {
		close(g.started) // the interceptor returns while the operation runs
		time.Sleep(5 * time.Millisecond)
		ran.Store(true)
		return errNope
	})
	assert.True(t, ran.Load(), "Intercept returned before the operation")
	require.ErrorIs(t, err, errNope)
	require.ErrorIs(t, <-g.res, errNope)

	bus = events.NewBus()
	g = &goNext{start: make(chan struct{}), res: make(chan error, 1)}
	bus.Register(g)
	var runs atomic.Int32
	err = bus.Intercept(context.Background(), insertOp(), func(context.Context) error { runs.Add(1); return nil })
	require.ErrorContains(t, err, "without running")
	close(g.start) // next comes late
	require.ErrorContains(t, <-g.res, "after the interceptors returned")
	assert.Zero(t, runs.Load(), "the operation ran after Intercept returned")
}
