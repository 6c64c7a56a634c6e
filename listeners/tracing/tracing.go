// Package tracing traces and measures every repository operation with
// OpenTelemetry. Register a Tracing on the bus, and each operation of the
// repositories on it gets a span, whose children are the driver's own
// spans (otelmongo on the same client), with an event per listener call
// (or a child span, WithListenerSpans), and a db.client.operation.duration
// measurement:
//
//	bus.Register(tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)))
//
// The span of an operation is named after the repository method and the
// collection ("Insert users"), of kind INTERNAL, with the database
// semantic conventions' attributes (db.system.name "mongodb", db.namespace,
// db.collection.name, db.operation.name the method), the model type
// (mgmevents.model), and the counts the operation has: mgmevents.inserted,
// mgmevents.matched, mgmevents.modified, mgmevents.upserted,
// mgmevents.deleted and db.response.returned_rows. A failure sets status
// Error, records an exception event, and sets error.type (see below); a
// listener that vetoed, or failed after the write, is named by
// mgmevents.listener and mgmevents.event. A read (FindOne, FindByID,
// FindOneAndUpdate, FindOneAndDelete) that finds nothing is no failure:
// its status stays unset, with db.response.returned_rows 0.
//
// No filter, update, pipeline, document or field value goes into a span,
// an event or a metric, so nothing personal or encrypted reaches a trace.
// Errors are described by what they are, not by their text, which may
// quote values (a duplicate key error quotes the key): error.type is one of
// "vetoed", "listener", "panic", "timeout", "canceled", "not_found",
// "version_conflict", "invalid_argument", "duplicate_key", "network", "server_error_<code>" or
// "_OTHER", and the exception message says which listener, event or server
// code it was. An error that has an ErrorType() string method, as repo's
// ErrVersionConflict and ErrInvalidArgument do, is of the kind it names.
//
// Only the OpenTelemetry API is imported; the application brings the SDK.
package tracing

import (
	"context"
	"sync"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/sequence"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of the spans and metrics.
const scope = "github.com/mgmevents/mgmevents/listeners/tracing"

// Tracing is the interceptor (events.Interceptor) and listener tracer
// (events.ListenerTracer) that traces and measures repository operations.
// It handles no events. Create it with New and register it on the bus.
// It is safe for concurrent use.
type Tracing struct {
	tracer        trace.Tracer
	listenerSpans bool // WithListenerSpans
	duration      dbconv.ClientOperationDuration
	ops           sync.Map // opKey -> *opAttrs
	listeners     sync.Map // listenerKey -> *spanAttrs
}

// Option configures New.
type Option func(*config)

type config struct {
	tp            trace.TracerProvider
	mp            metric.MeterProvider
	alloc         *sequence.Allocator
	relays        []*outbox.Relay
	listenerSpans bool
}

// WithTracerProvider makes spans with tp instead of otel's global
// provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp != nil {
			c.tp = tp
		}
	}
}

// WithMeterProvider measures with mp instead of otel's global provider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp != nil {
			c.mp = mp
		}
	}
}

// WithListenerSpans makes each listener call a child span of the
// operation's span, with the listener's own database calls (otelmongo on
// the same client) as its children, instead of an event on the
// operation's span (see TraceListener). A span costs more than an event:
// with the SDK's batch processor, each one is another hand-off to the
// exporter's goroutine.
func WithListenerSpans() Option { return func(c *config) { c.listenerSpans = true } }

// WithAllocator reports a's counts as metrics (see New), such as those of
// the allocator AutoKeys uses (AutoKeys.Allocator).
func WithAllocator(a *sequence.Allocator) Option { return func(c *config) { c.alloc = a } }

// WithRelay reports r's counts as metrics (see New). It may be given more
// than once.
func WithRelay(r *outbox.Relay) Option {
	return func(c *config) {
		if r != nil {
			c.relays = append(c.relays, r)
		}
	}
}

// New returns a Tracing that makes its spans and measurements with the
// global providers of package otel, or those the options give. Its
// metrics are:
//
//   - db.client.operation.duration, a histogram of each operation's
//     duration in seconds, with the span's attributes but the counts, and
//     error.type on failures;
//   - with WithAllocator, the allocator's counts (sequence.Stats):
//     mgmevents.sequence.handed_out and mgmevents.sequence.given_back
//     (numbers), mgmevents.sequence.blocks (blocks fetched) and
//     mgmevents.sequence.round_trips (counter round trips);
//   - with WithRelay, mgmevents.outbox.delivered, mgmevents.outbox.failed
//     (publish attempts) and mgmevents.outbox.dead_lettered, counted by the
//     relays, mgmevents.outbox.dead_letters, the messages waiting in
//     outbox.DeadLetters when a relay last counted them,
//     mgmevents.outbox.pending, the undelivered events as the relay that
//     counted last counted them (outbox.Stats.Counted), and
//     mgmevents.outbox.oldest_pending_age, in seconds since the oldest of
//     them was recorded, by that relay's clock (outbox.Stats.OldestAge; 0
//     when none).
//
// An instrument the meter refuses is reported to otel.Handle and left out.
func New(opts ...Option) *Tracing {
	c := config{tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider()}
	for _, o := range opts {
		o(&c)
	}
	t := &Tracing{tracer: c.tp.Tracer(scope), listenerSpans: c.listenerSpans}
	meter := c.mp.Meter(scope)
	var err error
	if t.duration, err = dbconv.NewClientOperationDuration(meter,
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10)); err != nil {
		otel.Handle(err)
	}
	if err := observe(meter, c.alloc, c.relays); err != nil {
		otel.Handle(err)
	}
	return t
}

// HandleEvent does nothing: Tracing handles no events, and registers for
// none (EventTypes).
func (t *Tracing) HandleEvent(context.Context, *events.Event) error { return nil }

// EventTypes returns none, so that the bus never calls HandleEvent.
func (t *Tracing) EventTypes() []events.Type { return nil }
