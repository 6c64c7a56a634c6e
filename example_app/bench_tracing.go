package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/tracing"
	"github.com/mgmevents/mgmevents/repo"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// countingExporter counts the spans it is given and drops them: the SDK
// records and exports every span, and nothing piles up.
type countingExporter struct{ n atomic.Int64 }

func (c *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	c.n.Add(int64(len(spans)))
	return nil
}

func (c *countingExporter) Shutdown(context.Context) error { return nil }

// benchTracing: repo.Insert with Tracing registered, every span sampled,
// recorded and exported in batches by the OpenTelemetry SDK and every
// duration measured, against the same Insert on a bus without it (both
// with AutoKeys, into the same collection).
func benchTracing(env *benchEnv) ([]figure, error) {
	exp := &countingExporter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(exp))
	defer tp.Shutdown(context.Background())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	bus := events.NewBus()
	bus.Register(env.keys)
	bus.Register(tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp), tracing.WithAllocator(env.keys.Allocator())))
	traced, err := repo.New[*User](bus, repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	if err := traced.Insert(env.ctx, &User{UserName: "warm"}); err != nil {
		return nil, err
	}
	plain := &variant{name: "repo", op: func(ctx context.Context, _ int) error {
		return env.users.Insert(ctx, &User{UserName: "bench"})
	}}
	lib := &variant{name: "repo traced", op: func(ctx context.Context, _ int) error {
		return traced.Insert(ctx, &User{UserName: "bench"})
	}}
	if err := env.alternate("tracing", env.c.rounds, env.c.inserts, plain, lib); err != nil {
		return nil, err
	}
	if err := tp.ForceFlush(env.ctx); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, plain)
	return []figure{
		{"tracing_ratio", r, ci, fmt.Sprintf("repo.Insert with Tracing and a recording SDK (%d spans exported) %.0f/s ÷ without %.0f/s; %s",
			exp.n.Load(), lib.perSec(), plain.perSec(), sp), "≥ 0.95"},
	}, nil
}
