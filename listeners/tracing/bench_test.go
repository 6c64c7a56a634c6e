package tracing_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/tracing"
	"github.com/mgmevents/mgmevents/repo"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkInsert times repo.Insert of a model with an auto key, without
// Tracing, with it on a recording SDK (every span sampled, exported in
// batches, every duration measured), and with it and WithListenerSpans.
func BenchmarkInsert(b *testing.B) {
	for _, v := range []struct {
		name string
		opts []tracing.Option // nil: no Tracing
	}{
		{"plain", nil},
		{"traced", []tracing.Option{}},
		{"traced with listener spans", []tracing.Option{tracing.WithListenerSpans()}},
	} {
		b.Run(v.name, func(b *testing.B) {
			g := newRig(b, false)
			bus := events.NewBus()
			bus.Register(g.keys)
			if v.opts != nil {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer tp.Shutdown(ctx)
				defer mp.Shutdown(ctx)
				bus.Register(tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)}, v.opts...)...))
			}
			r, err := repo.New[*Account](bus, repo.WithDatabase(g.db))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Insert(ctx, &Account{Email: "x"}); err != nil {
					b.Fatal(err)
				}
			}
		})
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
