package async_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/async"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// heldBus returns a bus with an async collector and a synchronous one.
func heldBus(t *testing.T) (bus *events.Bus, a *async.Listener, later, inline *collect) {
	t.Helper()
	later, inline = &collect{}, &collect{}
	a = async.New(later, async.WithErrorHandler(later.report))
	bus = events.NewBus()
	bus.Register(a)
	bus.Register(inline)
	return bus, a, later, inline
}

func publish(t *testing.T, ctx context.Context, bus *events.Bus, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		require.NoError(t, bus.Publish(ctx, saved(i)))
	}
}

// A commit delivers what the transaction published, in order, to the
// async listener, which has had nothing before; the synchronous listener
// had each event inline.
func TestHeldCommitDelivers(t *testing.T) {
	bus, a, later, inline := heldBus(t)
	ctx, held := async.Hold(context.Background())
	publish(t, ctx, bus, 0, 3)
	assert.Equal(t, []int{0, 1, 2}, inline.indexes(), "synchronous listeners run inline")
	assert.Zero(t, a.Queued(), "nothing is queued before the commit")
	require.NoError(t, held.Release(context.Background()))
	require.NoError(t, held.Release(context.Background()), "a second Release does nothing")
	closeNow(t, a)
	assert.Equal(t, []int{0, 1, 2}, later.indexes())
	assert.Empty(t, later.errs())
}

// An abort drops the events: the async listener never hears of them.
func TestHeldAbortDrops(t *testing.T) {
	bus, a, later, inline := heldBus(t)
	ctx, held := async.Hold(context.Background())
	publish(t, ctx, bus, 0, 2)
	assert.Equal(t, 2, held.Discard())
	assert.Zero(t, held.Discard())
	require.NoError(t, held.Release(context.Background()), "Release after Discard does nothing")
	closeNow(t, a)
	assert.Empty(t, later.indexes())
	assert.Equal(t, []int{0, 1}, inline.indexes())
}

// A retried transaction body starts a fresh Held: the first attempt's
// events are dropped, the second's delivered.
func TestHeldRetryDropsFirstAttempt(t *testing.T) {
	bus, a, later, _ := heldBus(t)
	var held *async.Held
	for attempt := range 2 {
		if held != nil {
			held.Discard()
		}
		var ctx context.Context
		ctx, held = async.Hold(context.Background())
		publish(t, ctx, bus, attempt*10, attempt*10+2)
	}
	require.NoError(t, held.Release(context.Background()))
	closeNow(t, a)
	assert.Equal(t, []int{10, 11}, later.indexes())
}

// An inner Held hands its events to the outer one: they wait for the
// outer Release, and go with the outer Discard.
func TestHeldNested(t *testing.T) {
	for _, commit := range []bool{true, false} {
		bus, a, later, _ := heldBus(t)
		outerCtx, outer := async.Hold(context.Background())
		publish(t, outerCtx, bus, 0, 1)
		innerCtx, inner := async.Hold(outerCtx)
		publish(t, innerCtx, bus, 1, 3)
		require.NoError(t, inner.Release(context.Background()))
		assert.Zero(t, a.Queued(), "the inner Release queues nothing")
		want := []int{}
		if commit {
			require.NoError(t, outer.Release(context.Background()))
			want = []int{0, 1, 2}
		} else {
			assert.Equal(t, 3, outer.Discard(), "the outer Held has the inner one's events")
		}
		closeNow(t, a)
		assert.Equal(t, want, later.indexes(), "commit %v", commit)
	}
}

type valueKey struct{}

// The listener's context has the publisher's values but not the
// transaction's session, which has ended when the listener runs; and once
// the Held has ended, its context queues at once.
func TestHeldContext(t *testing.T) {
	client, err := mongo.Connect(context.Background(), options.Client().ApplyURI("mongodb://127.0.0.1:1/?connect=direct"))
	require.NoError(t, err)
	defer client.Disconnect(context.Background())
	sess, err := client.StartSession()
	require.NoError(t, err)
	defer sess.EndSession(context.Background())

	type seen struct {
		value   any
		session mongo.Session
	}
	got := make(chan seen, 2)
	a := async.New(events.ListenerFunc(func(ctx context.Context, _ *events.Event) error {
		got <- seen{ctx.Value(valueKey{}), mongo.SessionFromContext(ctx)}
		return nil
	}))
	ctx := mongo.NewSessionContext(context.WithValue(context.Background(), valueKey{}, "tenant-a"), sess)
	ctx2, held := async.Hold(ctx)
	require.NoError(t, a.HandleEvent(ctx2, saved(0)))
	require.NoError(t, held.Release(context.Background()))
	s := <-got
	assert.Equal(t, "tenant-a", s.value)
	assert.Nil(t, s.session, "the transaction's session is not carried")

	require.NoError(t, a.HandleEvent(ctx2, saved(1)))
	<-got // an ended Held holds nothing: the event is queued at once
	closeNow(t, a)
}

// An event that cannot be queued at the commit is an error of Release,
// naming the event and the listener.
func TestHeldReleaseToClosedListener(t *testing.T) {
	bus, a, _, _ := heldBus(t)
	ctx, held := async.Hold(context.Background())
	publish(t, ctx, bus, 0, 1)
	closeNow(t, a)
	err := held.Release(context.Background())
	require.ErrorIs(t, err, async.ErrClosed)
	var le *events.ListenerError
	require.True(t, errors.As(err, &le), "%v", err)
	assert.Equal(t, events.AfterSave, le.Type)
	assert.IsType(t, &collect{}, le.Listener)
}
