package tracing_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/tracing"
	"github.com/mgmevents/mgmevents/repo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkInsert times repo.Insert of a model with an auto key, without
// Tracing, with it on a recording SDK (every span sampled, exported in
// batches, every duration measured), and with it and WithListenerSpans;
// and, as the floor, the untraced Insert inside one span and one
// measurement made directly with the same SDK: what any tracing of it
// costs at least.
func BenchmarkInsert(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []tracing.Option // nil: no Tracing
	}{
		{"plain", nil},
		{"floor", nil},
		{"traced", []tracing.Option{}},
		{"traced with listener spans", []tracing.Option{tracing.WithListenerSpans()}},
	} {
		b.Run(v.name, func(b *testing.B) {
			g := newRig(b, false)
			bus := events.NewBus()
			bus.Register(g.keys)
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer tp.Shutdown(ctx)
			defer mp.Shutdown(ctx)
			if v.opts != nil {
				bus.Register(tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)}, v.opts...)...))
			}
			r, err := repo.New[*Account](bus, repo.WithDatabase(g.db))
			if err != nil {
				b.Fatal(err)
			}
			insert := func(ctx context.Context) error { return r.Insert(ctx, &Account{Email: "x"}) }
			if v.name == "floor" {
				insert = bare(b, tp, mp, g.db.Name(), insert)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := insert(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bare wraps op in one span with the attributes Tracing gives an Insert of
// Accounts, its count, and one measurement, made directly with tp and mp.
func bare(b testing.TB, tp trace.TracerProvider, mp metric.MeterProvider, db string, op func(context.Context) error) func(context.Context) error {
	tracer := tp.Tracer("bench")
	hist, err := mp.Meter("bench").Float64Histogram("db.client.operation.duration", metric.WithUnit("s"))
	if err != nil {
		b.Fatal(err)
	}
	attrs := []attribute.KeyValue{semconv.DBSystemNameMongoDB, semconv.DBNamespace(db), semconv.DBCollectionName("accounts"),
		semconv.DBOperationName("Insert"), attribute.String("mgmevents.model", reflect.TypeFor[*Account]().String())}
	set := attribute.NewSet(attrs...)
	return func(ctx context.Context) error {
		start := time.Now()
		ctx, span := tracer.Start(ctx, "Insert accounts", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		err := op(ctx)
		span.SetAttributes(attribute.Int64("mgmevents.inserted", 1))
		span.End()
		hist.Record(ctx, time.Since(start).Seconds(), metric.WithAttributeSet(set))
		return err
	}
}

// BenchmarkTracingCost times operations the server takes no part in, so
// that what tracing alone costs shows: an empty InsertMany (a span and a
// measurement), and an Insert vetoed on BeforeSave (besides, a listener
// span, and the failure's status, event and error.type).
func BenchmarkTracingCost(b *testing.B) {
	vetoed := context.WithValue(ctx, vetoKey{}, true)
	for _, traced := range []bool{false, true} {
		bus := events.NewBus()
		bus.Register(events.ListenerFunc(veto), events.On(events.BeforeSave))
		name := "plain"
		if traced {
			name = "traced"
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer tp.Shutdown(ctx)
			defer mp.Shutdown(ctx)
			bus.Register(tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)))
		}
		r, err := repo.New[*Account](bus, repo.WithDatabase(srv.Database(b)))
		if err != nil {
			b.Fatal(err)
		}
		b.Run("InsertMany(nil)/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.InsertMany(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("vetoed Insert/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Insert(vetoed, &Account{Email: "x"}); err == nil {
					b.Fatal("not vetoed")
				}
			}
		})
	}
}
