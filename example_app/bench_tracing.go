package main

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
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
// with AutoKeys, into the same collection); and, as a third variant, that
// Insert inside a span and a measurement made directly with the SDK, the
// least any tracing of it costs.
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
	floor, err := bareSDK(tp, mp, env)
	if err != nil {
		return nil, err
	}
	if err := env.alternate("tracing", env.c.rounds, env.c.inserts, plain, lib, floor); err != nil {
		return nil, err
	}
	if err := tp.ForceFlush(env.ctx); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, plain)
	fr, fci, fsp := throughputRatio(floor, plain)
	return []figure{
		{"tracing_ratio", r, ci, fmt.Sprintf("repo.Insert with Tracing and a recording SDK (%d spans exported in this phase) %.0f/s ÷ without %.0f/s; %s",
			exp.n.Load(), lib.perSec(), plain.perSec(), sp), "≥ 0.95"},
		{"tracing_floor_ratio", fr, fci, fmt.Sprintf("the same Insert inside one span and one measurement made by hand with the same SDK and attributes %.0f/s ÷ without %.0f/s, a third variant of tracing_ratio's rounds: what the SDK alone costs; %s",
			floor.perSec(), plain.perSec(), fsp), "reported"},
	}, nil
}

// bareSDK returns the variant that wraps the plain Insert in what any
// tracing of it costs at least: one span with the attributes Tracing gives
// an Insert, its count, and one measurement, made directly with the SDK.
func bareSDK(tp trace.TracerProvider, mp metric.MeterProvider, env *benchEnv) (*variant, error) {
	tracer := tp.Tracer("bench")
	hist, err := mp.Meter("bench").Float64Histogram("db.client.operation.duration", metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{
		semconv.DBSystemNameMongoDB,
		semconv.DBNamespace(env.db.Name()),
		semconv.DBCollectionName(env.users.Collection().Name()),
		semconv.DBOperationName("Insert"),
		attribute.String("mgmevents.model", reflect.TypeFor[*User]().String()),
	}
	set := attribute.NewSet(attrs...)
	name := "Insert " + env.users.Collection().Name()
	return &variant{name: "repo in a bare SDK span", op: func(ctx context.Context, _ int) error {
		start := time.Now()
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		err := env.users.Insert(ctx, &User{UserName: "bench"})
		span.SetAttributes(attribute.Int64("mgmevents.inserted", 1))
		span.End()
		hist.Record(ctx, time.Since(start).Seconds(), metric.WithAttributeSet(set))
		return err
	}}, nil
}
