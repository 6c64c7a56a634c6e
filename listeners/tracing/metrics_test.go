package tracing_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/async"
	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/listeners/tracing"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Order records domain events for the outbox.
type Order struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Status           string `bson:"status"`
}

// sum returns the value of an int64 counter or gauge with one data point.
func sum(t *testing.T, ms map[string]metricdata.Metrics, name string) int64 {
	t.Helper()
	m, ok := ms[name]
	require.True(t, ok, "metric %s", name)
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		require.Len(t, d.DataPoints, 1, name)
		assert.True(t, d.IsMonotonic, name)
		return d.DataPoints[0].Value
	case metricdata.Gauge[int64]:
		require.Len(t, d.DataPoints, 1, name)
		return d.DataPoints[0].Value
	}
	t.Fatalf("%s is a %T", name, m.Data)
	return 0
}

// TestAllocatorAndRelayMetrics: the allocator's round trips and the
// relays' counts are read when the meter collects.
func TestAllocatorAndRelayMetrics(t *testing.T) {
	g := newRig(t, false)
	for range 3 {
		require.NoError(t, g.accounts.Insert(ctx, &Account{}))
	}

	bus := events.NewBus()
	bus.Register(outbox.New())
	one := srv.Database(t) // the outbox asks for one connection on FerretDB
	orders, err := repo.New[*Order](bus, repo.WithDatabase(one))
	require.NoError(t, err)
	o := &Order{Status: "placed"}
	o.Record("poison", nil)
	o.Record("placed", nil)
	require.NoError(t, orders.Insert(ctx, o))
	relay, err := outbox.NewRelay(one, outbox.PublisherFunc(func(_ context.Context, m outbox.Message) error {
		if m.Type == "poison" {
			return errors.New("refused")
		}
		return nil
	}), outbox.WithMaxAttempts(1), outbox.WithBackoff(func(int) time.Duration { return 0 }),
		outbox.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	_, err = relay.Drain(ctx)
	require.NoError(t, err)

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	tracing.New(tracing.WithMeterProvider(mp), tracing.WithAllocator(g.keys.Allocator()), tracing.WithRelay(relay))
	require.NoError(t, g.keys.Close(ctx)) // gives the block's unused numbers back
	ms := collect(t, reader)
	as := g.keys.Allocator().Stats()
	assert.Positive(t, as.GivenBack)
	assert.EqualValues(t, 3, as.HandedOut)
	assert.Positive(t, as.Blocks)
	assert.Positive(t, as.RoundTrips)
	assert.Equal(t, as.HandedOut, sum(t, ms, "mgmevents.sequence.handed_out"))
	assert.Equal(t, as.GivenBack, sum(t, ms, "mgmevents.sequence.given_back"))
	assert.Equal(t, as.Blocks, sum(t, ms, "mgmevents.sequence.blocks"))
	assert.Equal(t, as.RoundTrips, sum(t, ms, "mgmevents.sequence.round_trips"))
	st := relay.Stats()
	assert.False(t, st.Counted.IsZero())
	st.Counted = time.Time{}
	assert.Equal(t, outbox.Stats{Delivered: 1, Failed: 1, DeadLettered: 1, DeadLetters: 1}, st)
	assert.Equal(t, st.Delivered, sum(t, ms, "mgmevents.outbox.delivered"))
	assert.Equal(t, st.Failed, sum(t, ms, "mgmevents.outbox.failed"))
	assert.Equal(t, st.DeadLettered, sum(t, ms, "mgmevents.outbox.dead_lettered"))
	assert.Equal(t, st.DeadLetters, sum(t, ms, "mgmevents.outbox.dead_letters"))
	assert.Equal(t, st.Hung, sum(t, ms, "mgmevents.outbox.hung"))
	assert.Zero(t, sum(t, ms, "mgmevents.outbox.pending"))
	assert.Zero(t, gauge(t, ms, "mgmevents.outbox.oldest_pending_age"))
}

// gauge returns the value of a float64 gauge with one data point.
func gauge(t *testing.T, ms map[string]metricdata.Metrics, name string) float64 {
	t.Helper()
	m, ok := ms[name]
	require.True(t, ok, "metric %s", name)
	d, ok := m.Data.(metricdata.Gauge[float64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	require.Len(t, d.DataPoints, 1, name)
	return d.DataPoints[0].Value
}

// TestPendingMetrics: the events a relay could not deliver are pending,
// and the age of the oldest grows from when it was recorded; once another
// relay has delivered them and counted since, its count is the one
// reported, not the stale one of the relay that failed.
func TestPendingMetrics(t *testing.T) {
	c := fakeclock.New(time.Now())
	bus := events.NewBus()
	bus.Register(outbox.New(outbox.WithClock(c.Now)))
	one := srv.Database(t)
	orders, err := repo.New[*Order](bus, repo.WithDatabase(one))
	require.NoError(t, err)
	for range 2 {
		o := &Order{Status: "placed"}
		o.Record("placed", nil)
		require.NoError(t, orders.Insert(ctx, o))
	}
	lease := time.Second
	opts := []outbox.RelayOption{outbox.WithLease(lease), outbox.WithBackoff(func(int) time.Duration { return 0 }),
		outbox.WithLogger(slog.New(slog.DiscardHandler)), outbox.WithRelayClock(c)}
	failing, err := outbox.NewRelay(one, outbox.PublisherFunc(func(context.Context, outbox.Message) error { return errors.New("broker down") }), opts...)
	require.NoError(t, err)
	_, err = failing.Drain(ctx)
	require.NoError(t, err)
	c.Advance(time.Hour) // its leases end, and the events wait an hour

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	var delivered atomic.Int64
	working, err := outbox.NewRelay(one, outbox.PublisherFunc(func(context.Context, outbox.Message) error { delivered.Add(1); return nil }), opts...)
	require.NoError(t, err)
	tracing.New(tracing.WithMeterProvider(mp), tracing.WithRelay(failing), tracing.WithRelay(working))
	ms := collect(t, reader)
	assert.EqualValues(t, 2, sum(t, ms, "mgmevents.outbox.pending"))
	oldest := failing.Stats().Oldest
	require.False(t, oldest.IsZero())
	age := gauge(t, ms, "mgmevents.outbox.oldest_pending_age")
	assert.InDelta(t, c.Now().Sub(oldest).Seconds(), age, 1e-6, "by the relay's clock")
	assert.GreaterOrEqual(t, age, time.Hour.Seconds()-60)

	c.Advance(time.Second) // the working relay counts after the failing one

	_, err = working.Drain(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, delivered.Load())
	ms = collect(t, reader)
	assert.Zero(t, sum(t, ms, "mgmevents.outbox.pending"), "the count of the relay that counted last")
	assert.Zero(t, gauge(t, ms, "mgmevents.outbox.oldest_pending_age"))
}

// TestAsyncListenerTraced: an async listener on a traced bus gets its
// events; its event on the operation's span is the time the operation
// took to queue the event.
func TestAsyncListenerTraced(t *testing.T) {
	g := newRig(t, false)
	got := make(chan events.Type, 8)
	a := async.New(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		got <- e.Type
		return nil
	}))
	g.bus.Register(a)
	require.NoError(t, g.accounts.Insert(ctx, &Account{}))
	require.NoError(t, a.Close(ctx))
	assert.Equal(t, events.AfterSave, <-got)
	spans := g.take()
	op := named(spans, "Insert accounts")
	require.Len(t, op, 1)
	var queued int
	for _, e := range op[0].Events {
		if e.Name == "AfterSave *async.Listener" {
			queued++
		}
	}
	assert.Equal(t, 1, queued)
}
