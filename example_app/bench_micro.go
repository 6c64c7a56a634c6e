package main

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/sequence"
)

// benchMicro: the allocator and the bus, as go test benchmarks.
func benchMicro(env *benchEnv) ([]figure, error) {
	ctx, db := env.ctx, env.db
	env.progress.begin("allocator and bus", 5, "benchmarks")
	defer env.progress.end()
	alloc, err := sequence.New(db, sequence.WithBatch(1<<20), sequence.WithMaxGrowth(1))
	if err != nil {
		return nil, err
	}
	warm, err := alloc.Sequence("warm")
	if err != nil {
		return nil, err
	}
	if _, err := warm.Next(ctx); err != nil {
		return nil, err
	}
	var benchErr error
	next := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := warm.Next(ctx); err != nil {
				benchErr = err
			}
		}
	})
	env.progress.step()
	parallel := testing.Benchmark(func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := warm.Next(ctx); err != nil {
					benchErr = err
				}
			}
		})
	})
	env.progress.step()
	if benchErr != nil {
		return nil, benchErr
	}
	// Round trips per 10,000 numbers with the default batch (100) and
	// adaptive blocks, taken one at a time as inserts take them.
	rtAlloc, err := sequence.New(db)
	if err != nil {
		return nil, err
	}
	for range 10000 {
		if _, err := rtAlloc.Next(ctx, "rt"); err != nil {
			return nil, err
		}
	}
	rt := rtAlloc.Stats().RoundTrips
	env.progress.step()

	dbus := events.NewBus()
	for range 3 {
		dbus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.ForModel[*BenchPlain]())
	}
	ev := &events.Event{Type: events.BeforeSave, ModelType: env.users.Schema().Type, Collection: "users"}
	dispatch := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = dbus.Publish(ctx, ev)
		}
	})
	env.progress.step()
	mbus := events.NewBus()
	mbus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.ForModel[*User]())
	matched := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = mbus.Publish(ctx, ev)
		}
	})
	env.progress.step()

	perOp := func(r testing.BenchmarkResult) float64 { return float64(r.T.Nanoseconds()) / float64(r.N) }
	return []figure{
		{"alloc_ns", perOp(next), nil, fmt.Sprintf("warm Sequence.Next, 1 goroutine, %d allocs/op", next.AllocsPerOp()), "≤ 25, 0 allocs"},
		{"alloc_allocs", float64(next.AllocsPerOp()), nil, "allocations per warm Next", "0"},
		{"alloc_parallel_ids_per_s", 1e9 / perOp(parallel), nil, fmt.Sprintf("numbers/s from %d goroutines", runtime.GOMAXPROCS(0)), "—"},
		{"roundtrips_per_10k", float64(rt), nil, "counter round trips for 10,000 Next, batch 100, adaptive", "—"},
		{"dispatch_ns", perOp(dispatch), nil, fmt.Sprintf("Publish, 3 listeners of other models, %d allocs/op", dispatch.AllocsPerOp()), "0 allocs"},
		{"dispatch_matched_ns", perOp(matched), nil, fmt.Sprintf("Publish, 1 matching listener, %d allocs/op", matched.AllocsPerOp()), "—"},
	}, nil
}
