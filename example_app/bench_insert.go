package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// BenchBulk is the demo's User in its own collection, so that the bulk
// phase writes into a collection as fresh as the raw side's.
type BenchBulk User

// BenchPlain is a plain mgm model, for the comparison with mgm itself.
type BenchPlain struct {
	mgm.DefaultModel `bson:",inline"`
	UserName         string `bson:"userName"`
	Age              int    `bson:"age"`
}

// benchInsert: repo.Insert, raw InsertOne, and the reference designs'
// findOneAndUpdate before each InsertOne.
func benchInsert(env *benchEnv) ([]figure, error) {
	naiveColl, err := env.rawCollection("naive_users")
	if err != nil {
		return nil, err
	}
	counters := env.db.Collection("naive_counters")
	raw := &variant{name: "raw", op: func(ctx context.Context, _ int) error {
		_, err := env.rawUsers.InsertOne(ctx, env.rawDoc())
		return err
	}}
	lib := &variant{name: "repo", op: func(ctx context.Context, _ int) error {
		return env.users.Insert(ctx, &User{UserName: "bench"})
	}}
	naive := &variant{name: "naive", op: func(ctx context.Context, _ int) error {
		var doc struct {
			Seq int64 `bson:"seq"`
		}
		err := counters.FindOneAndUpdate(ctx, bson.M{"_id": "users"}, bson.M{"$inc": bson.M{"seq": 1}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
		if err != nil {
			return err
		}
		// FerretDB's findAndModify is not atomic, so the raw number is
		// only timed here; the stored one stays unique.
		_, err = naiveColl.InsertOne(ctx, env.rawDoc())
		return err
	}}
	trips0 := env.keys.Allocator().Stats().RoundTrips
	if err := env.alternate("insert", env.c.rounds, env.c.inserts, raw, lib, naive); err != nil {
		return nil, err
	}
	libTrips := env.keys.Allocator().Stats().RoundTrips - trips0
	insR, insCI, insSpread := throughputRatio(lib, raw)
	naiveR, naiveCI, naiveSpread := throughputRatio(naive, raw)
	return []figure{
		{"insert_ratio", insR, insCI, fmt.Sprintf("repo.Insert %.0f/s ÷ raw InsertOne %.0f/s; %s", lib.perSec(), raw.perSec(), insSpread), "≥ 0.95"},
		{"naive_ratio", naiveR, naiveCI, fmt.Sprintf("findOneAndUpdate+InsertOne %.0f/s ÷ raw; %s", naive.perSec(), naiveSpread), "reported; 0.37–0.47 before"},
		{"p99_ratio", float64(lib.p99()) / float64(raw.p99()), nil, fmt.Sprintf("p99 latency over all rounds, repo.Insert %v ÷ raw InsertOne %v", lib.p99().Round(time.Microsecond), raw.p99().Round(time.Microsecond)), "≤ 1.10"},
		{"insert_roundtrips", float64(libTrips), nil, fmt.Sprintf("counter round trips during the %d timed repo.Insert", lib.n), "—"},
	}, nil
}

// busyWork is the client CPU busy_5us_ratio adds before each Create.
const busyWork = 5 * time.Microsecond

// benchMgm: mgm's own Create against the repository with three listeners,
// on mgm's client and collection.
func benchMgm(env *benchEnv) ([]figure, error) {
	mbus := events.NewBus()
	for range 3 {
		mbus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
			if e.Model == nil && e.Type == events.BeforeSave {
				return fmt.Errorf("no model")
			}
			return nil
		}))
	}
	plains, err := repo.New[*BenchPlain](mbus) // mgm's client and collection, as Create uses
	if err != nil {
		return nil, err
	}
	mgmColl := mgm.Coll(&BenchPlain{})
	raw := &variant{name: "mgm", op: func(ctx context.Context, i int) error {
		return mgmColl.CreateWithCtx(ctx, &BenchPlain{UserName: "bench", Age: i})
	}}
	lib := &variant{name: "mgm+repo", op: func(ctx context.Context, i int) error {
		return plains.Insert(ctx, &BenchPlain{UserName: "bench", Age: i})
	}}
	// The control: mgm's Create again, as a third variant of the same
	// rounds. Its ratio to the first differs from 1.00 by the bench's
	// noise alone.
	again := &variant{name: "mgm again", op: raw.op}
	// The calibration: mgm's Create after a few microseconds of busy work,
	// which is what this rig makes of a little client CPU per insert.
	busy := &variant{name: "mgm after busy work", op: func(ctx context.Context, i int) error {
		for start := time.Now(); time.Since(start) < busyWork; {
		}
		return raw.op(ctx, i)
	}}
	if err := env.alternate("mgm", env.c.rounds, env.c.inserts, raw, lib, again, busy); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, raw)
	aa, aaCI, aaSp := throughputRatio(again, raw)
	bb, bbCI, bbSp := throughputRatio(busy, raw)
	return []figure{
		{"mgm_ratio", r, ci, fmt.Sprintf("repo.Insert with 3 listeners %.0f/s ÷ mgm Create %.0f/s; %s", lib.perSec(), raw.perSec(), sp), "≥ 0.97"},
		{"busy_5us_ratio", bb, bbCI, fmt.Sprintf("mgm Create after %v of busy client CPU %.0f/s ÷ Create %.0f/s, a fourth variant of mgm_ratio's rounds: what a few µs of client work per insert costs here; %s", busyWork, busy.perSec(), raw.perSec(), bbSp), "reported"},
		{"mgm_control_ratio", aa, aaCI, fmt.Sprintf("mgm Create %.0f/s ÷ the same mgm Create %.0f/s, a third variant of mgm_ratio's rounds: the bench's noise; %s", again.perSec(), raw.perSec(), aaSp), "reported; 1.00 is no noise"},
	}, nil
}

// benchBulk: one InsertMany of c.bulk documents at a time.
func benchBulk(env *benchEnv) ([]figure, error) {
	ctx, n := env.ctx, env.c.bulk
	rawBulk, err := env.rawCollection("raw_bulk")
	if err != nil {
		return nil, err
	}
	bulks, err := repo.New[*BenchBulk](env.bus, repo.WithDatabase(env.db))
	if err != nil {
		return nil, err
	}
	if err := bulks.Insert(ctx, &BenchBulk{UserName: "warm"}); err != nil {
		return nil, err
	}
	if _, err := rawBulk.InsertOne(ctx, env.rawDoc()); err != nil {
		return nil, err
	}
	raw := &variant{name: "raw bulk", op: func(ctx context.Context, _ int) error {
		docs := make([]any, n)
		for i := range docs {
			docs[i] = env.rawDoc()
		}
		_, err := rawBulk.InsertMany(ctx, docs)
		return err
	}}
	lib := &variant{name: "repo bulk", op: func(ctx context.Context, _ int) error {
		ms := make([]*BenchBulk, n)
		for i := range ms {
			ms[i] = &BenchBulk{UserName: "bench"}
		}
		return bulks.InsertMany(ctx, ms)
	}}
	if err := env.alternate("bulk", env.c.bulkRounds, 1, raw, lib); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, raw)
	return []figure{
		{"bulk_ratio", r, ci, fmt.Sprintf("repo.InsertMany ÷ raw InsertMany of %d docs, %.0f vs %.0f docs/s; %s", n, lib.perSec()*float64(n), raw.perSec()*float64(n), sp), "≥ 0.95"},
	}, nil
}

// benchConcurrentInsert: the insert figure with c.workers goroutines
// inserting at once on each side.
func benchConcurrentInsert(env *benchEnv) ([]figure, error) {
	w := env.c.workers
	raw := &variant{name: "raw concurrent", workers: w, op: func(ctx context.Context, _ int) error {
		_, err := env.rawUsers.InsertOne(ctx, env.rawDoc())
		return err
	}}
	lib := &variant{name: "repo concurrent", workers: w, op: func(ctx context.Context, _ int) error {
		return env.users.Insert(ctx, &User{UserName: "bench"})
	}}
	if err := env.alternate("concurrent insert", env.c.concurrentRounds, env.c.inserts, raw, lib); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(lib, raw)
	return []figure{
		{"concurrent_insert_ratio", r, ci, fmt.Sprintf("repo.Insert %.0f/s ÷ raw InsertOne %.0f/s, %d goroutines each; %s", lib.perSec(), raw.perSec(), w, sp), "≥ 0.95"},
	}, nil
}
