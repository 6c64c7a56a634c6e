package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
)

// BenchFind is the demo's User in its own collection of c.bulk documents,
// which both sides read.
type BenchFind User

// benchFind: repo.Find of every document with one AfterConvert listener
// registered, against the raw Find and cursor.All into the same type.
func benchFind(env *benchEnv) ([]figure, error) {
	ctx, n := env.ctx, env.c.bulk
	bus := events.NewBus()
	var seen atomic.Int64
	bus.Register(events.TypedFunc(func(_ context.Context, _ *events.Event, _ *BenchFind) error {
		seen.Add(1)
		return nil
	}), events.On(events.AfterConvert))
	finds, err := repo.New[*BenchFind](bus, repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	coll := finds.Collection().Collection // both sides read this one
	docs := make([]any, n)
	for i := range docs {
		docs[i] = (*BenchFind)(env.rawDoc())
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		return nil, err
	}
	check := func(got int) error {
		if got != n {
			return fmt.Errorf("read %d documents, want %d", got, n)
		}
		return nil
	}
	raw := &variant{name: "raw find", op: func(ctx context.Context, _ int) error {
		cur, err := coll.Find(ctx, bson.D{})
		if err != nil {
			return err
		}
		var out []*BenchFind
		if err := cur.All(ctx, &out); err != nil {
			return err
		}
		return check(len(out))
	}}
	lib := &variant{name: "repo find", op: func(ctx context.Context, _ int) error {
		out, err := finds.Find(ctx, bson.D{})
		if err != nil {
			return err
		}
		return check(len(out))
	}}
	if err := env.alternate("find", env.c.bulkRounds, 1, raw, lib); err != nil {
		return nil, err
	}
	if seen.Load() != int64(lib.n*n) {
		return nil, fmt.Errorf("the AfterConvert listener saw %d models, want %d", seen.Load(), lib.n*n)
	}
	r, ci, sp := throughputRatio(lib, raw)
	return []figure{
		{"find_ratio", r, ci, fmt.Sprintf("repo.Find of %d with 1 AfterConvert listener ÷ raw Find+cursor.All, %.0f vs %.0f docs/s; %s", n, lib.perSec()*float64(n), raw.perSec()*float64(n), sp), "≥ 0.95"},
	}, nil
}
