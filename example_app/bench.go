package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/mgmevents/mgmevents/sequence"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
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

// figure is one line of the report.
type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	What  string  `json:"what"`
	Goal  string  `json:"goal"`
}

type benchConfig struct {
	inserts, rounds, bulk, bulkRounds int
	jsonFile                          string
}

func benchMain(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("example_app bench", flag.ContinueOnError)
	fs.SetOutput(out)
	var sf serverFlags
	sf.register(fs, "bench")
	var c benchConfig
	fs.IntVar(&c.inserts, "n", 50, "single inserts per variant per round")
	fs.IntVar(&c.rounds, "rounds", 300, "rounds; the variants alternate within each round")
	fs.IntVar(&c.bulk, "bulk", 1000, "documents per InsertMany")
	fs.IntVar(&c.bulkRounds, "bulk-rounds", 60, "InsertMany calls per variant, alternating")
	fs.StringVar(&c.jsonFile, "json", "", "also write the figures to this file")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./example_app bench [flags]\n\nMeasures the library side by side with the raw driver, alternating the variants in rounds.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.inserts < 10 || c.rounds < 1 || c.bulk < 1 || c.bulkRounds < 1 {
		fmt.Fprintln(out, "bench: -n must be ≥ 10, and -rounds, -bulk, -bulk-rounds ≥ 1")
		return 2
	}
	ctx := context.Background()
	uri, stop, err := sf.start(ctx, out)
	if err != nil {
		return fail(out, err)
	}
	defer stop()
	figs, err := bench(ctx, out, uri, sf.db, c)
	if err != nil {
		return fail(out, err)
	}
	report(out, figs)
	if c.jsonFile != "" {
		b, _ := json.MarshalIndent(figs, "", "  ")
		if err := os.WriteFile(c.jsonFile, append(b, '\n'), 0o644); err != nil {
			return fail(out, err)
		}
	}
	return 0
}

// variant is one way of inserting, timed op by op and round by round.
type variant struct {
	name   string
	op     func(ctx context.Context, i int) error
	rounds []round
	n      int
}

type round struct {
	dur time.Duration
	lat []time.Duration
}

func (v *variant) run(ctx context.Context, n int) error {
	r := round{lat: make([]time.Duration, 0, n)}
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		if err := v.op(ctx, v.n+i); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		r.lat = append(r.lat, time.Since(t0))
	}
	r.dur = time.Since(start)
	v.rounds = append(v.rounds, r)
	v.n += n
	return nil
}

func (v *variant) perSec() float64 {
	var d time.Duration
	for _, r := range v.rounds {
		d += r.dur
	}
	return float64(v.n) / d.Seconds()
}

// p99 is the 99th percentile of every latency of v, all rounds pooled.
func (v *variant) p99() time.Duration {
	var all []time.Duration
	for _, r := range v.rounds {
		all = append(all, r.lat...)
	}
	slices.Sort(all)
	return all[len(all)*99/100]
}

// ratio compares a with b round by round (they ran side by side) and
// returns the median ratio, with the smallest and largest, so that one
// round disturbed by the machine does not decide the figure. f gives a
// round's value.
func ratio(a, b *variant, f func(round) float64) (med, lo, hi float64) {
	rs := make([]float64, len(a.rounds))
	for i := range rs {
		rs[i] = f(a.rounds[i]) / f(b.rounds[i])
	}
	slices.Sort(rs)
	m := len(rs) / 2
	med = rs[m]
	if len(rs)%2 == 0 {
		med = (rs[m-1] + rs[m]) / 2
	}
	return med, rs[0], rs[len(rs)-1]
}

func throughput(r round) float64 { return float64(len(r.lat)) / r.dur.Seconds() }

// alternate runs each round's variants in a rotated order, so that drift
// in the machine's speed falls on all of them alike.
func alternate(ctx context.Context, rounds, n int, vs ...*variant) error {
	for r := range rounds {
		for k := range vs {
			if err := vs[(r+k)%len(vs)].run(ctx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

func bench(ctx context.Context, out io.Writer, uri, dbName string, c benchConfig) ([]figure, error) {
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(uri).SetRegistry(model.Registry()))
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(ctx)
	db := client.Database(mongotestName(dbName))
	defer db.Drop(context.Background())
	if err := mgm.SetDefaultConfig(nil, db.Name(), options.Client().ApplyURI(uri).SetRegistry(model.Registry())); err != nil {
		return nil, err
	}
	defer mgm.ResetDefaultConfig()

	keys, err := listeners.NewAutoKeys(db)
	if err != nil {
		return nil, err
	}
	bus := events.NewBus()
	bus.Register(keys)
	users, err := repo.New[*User](bus, repo.WithDatabase(db))
	if err != nil {
		return nil, err
	}
	// The raw collections get the same unique index AutoKeys makes, so
	// that both sides write the same document to the same kind of table.
	rawColl, naiveColl := db.Collection("raw_users"), db.Collection("naive_users")
	for _, coll := range []*mongo.Collection{rawColl, naiveColl, db.Collection("raw_bulk")} {
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "longId", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
			return nil, err
		}
	}
	counters := db.Collection("naive_counters")
	var local int64
	rawDoc := func() *User {
		local++
		u := &User{UserID: uuid.NewString(), LongID: local, UserName: "bench"}
		return u
	}
	// Warm up every path once: indexes, counters, connections.
	if err := users.Insert(ctx, &User{UserName: "warm"}); err != nil {
		return nil, err
	}
	if _, err := rawColl.InsertOne(ctx, rawDoc()); err != nil {
		return nil, err
	}

	fmt.Fprintf(out, "single inserts: %d rounds × %d per variant\n", c.rounds, c.inserts)
	raw := &variant{name: "raw", op: func(ctx context.Context, _ int) error {
		_, err := rawColl.InsertOne(ctx, rawDoc())
		return err
	}}
	lib := &variant{name: "repo", op: func(ctx context.Context, _ int) error {
		return users.Insert(ctx, &User{UserName: "bench"})
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
		local++
		// FerretDB's findAndModify is not atomic, so the raw number is
		// only timed here; the stored one stays unique.
		_, err = naiveColl.InsertOne(ctx, &User{UserID: uuid.NewString(), LongID: local, UserName: "bench"})
		return err
	}}
	trips0 := keys.Allocator().RoundTrips()
	if err := alternate(ctx, c.rounds, c.inserts, raw, lib, naive); err != nil {
		return nil, err
	}
	libTrips := keys.Allocator().RoundTrips() - trips0

	// mgm's own Create against the repository with three listeners.
	fmt.Fprintf(out, "mgm comparison: %d rounds × %d per variant\n", c.rounds, c.inserts)
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
	mgmRaw := &variant{name: "mgm", op: func(ctx context.Context, i int) error {
		return mgmColl.CreateWithCtx(ctx, &BenchPlain{UserName: "bench", Age: i})
	}}
	mgmLib := &variant{name: "mgm+repo", op: func(ctx context.Context, i int) error {
		return plains.Insert(ctx, &BenchPlain{UserName: "bench", Age: i})
	}}
	if err := alternate(ctx, c.rounds, c.inserts, mgmRaw, mgmLib); err != nil {
		return nil, err
	}

	// Bulk: one InsertMany of c.bulk documents at a time.
	fmt.Fprintf(out, "bulk: %d rounds × InsertMany of %d\n", c.bulkRounds, c.bulk)
	rawBulk := db.Collection("raw_bulk")
	bulkRaw := &variant{name: "raw bulk", op: func(ctx context.Context, _ int) error {
		docs := make([]any, c.bulk)
		for i := range docs {
			docs[i] = rawDoc()
		}
		_, err := rawBulk.InsertMany(ctx, docs)
		return err
	}}
	bulks, err := repo.New[*BenchBulk](bus, repo.WithDatabase(db))
	if err != nil {
		return nil, err
	}
	if err := bulks.Insert(ctx, &BenchBulk{UserName: "warm"}); err != nil {
		return nil, err
	}
	if _, err := rawBulk.InsertOne(ctx, rawDoc()); err != nil {
		return nil, err
	}
	bulkLib := &variant{name: "repo bulk", op: func(ctx context.Context, _ int) error {
		ms := make([]*BenchBulk, c.bulk)
		for i := range ms {
			ms[i] = &BenchBulk{UserName: "bench"}
		}
		return bulks.InsertMany(ctx, ms)
	}}
	if err := alternate(ctx, c.bulkRounds, 1, bulkRaw, bulkLib); err != nil {
		return nil, err
	}

	fmt.Fprintln(out, "allocator and bus: go test-style benchmarks")
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
	parallel := testing.Benchmark(func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := warm.Next(ctx); err != nil {
					benchErr = err
				}
			}
		})
	})
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
	rt := rtAlloc.RoundTrips()

	dbus := events.NewBus()
	for range 3 {
		dbus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.ForModel[*BenchPlain]())
	}
	ev := &events.Event{Type: events.BeforeSave, ModelType: users.Schema().Type, Collection: "users"}
	dispatch := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = dbus.Publish(ctx, ev)
		}
	})
	mbus2 := events.NewBus()
	mbus2.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.ForModel[*User]())
	matched := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = mbus2.Publish(ctx, ev)
		}
	})

	perOp := func(r testing.BenchmarkResult) float64 { return float64(r.T.Nanoseconds()) / float64(r.N) }
	spread := func(lo, hi float64) string { return fmt.Sprintf("rounds %.2f–%.2f", lo, hi) }
	insR, insLo, insHi := ratio(lib, raw, throughput)
	naiveR, naiveLo, naiveHi := ratio(naive, raw, throughput)
	bulkR, bulkLo, bulkHi := ratio(bulkLib, bulkRaw, throughput)
	p99R := float64(lib.p99()) / float64(raw.p99())
	mgmR, mgmLo, mgmHi := ratio(mgmLib, mgmRaw, throughput)
	return []figure{
		{"insert_ratio", insR, fmt.Sprintf("repo.Insert %.0f/s ÷ raw InsertOne %.0f/s; %s", lib.perSec(), raw.perSec(), spread(insLo, insHi)), "≥ 0.95"},
		{"naive_ratio", naiveR, fmt.Sprintf("findOneAndUpdate+InsertOne %.0f/s ÷ raw; %s", naive.perSec(), spread(naiveLo, naiveHi)), "reported; 0.37–0.47 before"},
		{"bulk_ratio", bulkR, fmt.Sprintf("repo.InsertMany ÷ raw InsertMany of %d docs, %.0f vs %.0f docs/s; %s", c.bulk, bulkLib.perSec()*float64(c.bulk), bulkRaw.perSec()*float64(c.bulk), spread(bulkLo, bulkHi)), "≥ 0.90"},
		{"p99_ratio", p99R, fmt.Sprintf("p99 latency over all rounds, repo.Insert %v ÷ raw InsertOne %v", lib.p99().Round(time.Microsecond), raw.p99().Round(time.Microsecond)), "≤ 1.10"},
		{"mgm_ratio", mgmR, fmt.Sprintf("repo.Insert with 3 listeners %.0f/s ÷ mgm Create %.0f/s; %s", mgmLib.perSec(), mgmRaw.perSec(), spread(mgmLo, mgmHi)), "≥ 0.97"},
		{"alloc_ns", perOp(next), fmt.Sprintf("warm Sequence.Next, 1 goroutine, %d allocs/op", next.AllocsPerOp()), "≤ 25, 0 allocs"},
		{"alloc_allocs", float64(next.AllocsPerOp()), "allocations per warm Next", "0"},
		{"alloc_parallel_ids_per_s", 1e9 / perOp(parallel), fmt.Sprintf("numbers/s from %d goroutines", runtime.GOMAXPROCS(0)), "—"},
		{"roundtrips_per_10k", float64(rt), "counter round trips for 10,000 Next, batch 100, adaptive", "—"},
		{"insert_roundtrips", float64(libTrips), fmt.Sprintf("counter round trips during the %d timed repo.Insert", lib.n), "—"},
		{"dispatch_ns", perOp(dispatch), fmt.Sprintf("Publish, 3 listeners of other models, %d allocs/op", dispatch.AllocsPerOp()), "0 allocs"},
		{"dispatch_matched_ns", perOp(matched), fmt.Sprintf("Publish, 1 matching listener, %d allocs/op", matched.AllocsPerOp()), "—"},
	}, nil
}

func report(out io.Writer, figs []figure) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tgoal\twhat")
	for _, f := range figs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, format(f.Value), f.Goal, f.What)
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, f := range figs {
		fmt.Fprintf(out, "%s: %s\n", f.Name, format(f.Value))
	}
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

func mongotestName(base string) string {
	return fmt.Sprintf("%s_%d_%d", base, os.Getpid(), time.Now().UnixNano()%1e6)
}
