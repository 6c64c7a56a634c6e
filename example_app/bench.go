package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

type benchConfig struct {
	inserts, rounds, bulk, bulkRounds int
	workers, concurrentRounds         int
	updateRounds, manyRounds          int
	outboxRounds                      int
	only                              map[string]bool // the phases to run; all when empty
	jsonFile                          string
}

// benchMain runs the bench; with both, the v2 line's bench follows on the
// same server, and the report gives both lines' figures side by side.
func benchMain(args []string, both bool, out, progressOut io.Writer) int {
	fs := flag.NewFlagSet("example_app bench", flag.ContinueOnError)
	fs.SetOutput(out)
	var sf serverFlags
	sf.register(fs, "bench")
	var c benchConfig
	fs.IntVar(&c.inserts, "n", 50, "operations per variant per round (per goroutine when concurrent)")
	fs.IntVar(&c.rounds, "rounds", 300, "rounds of single inserts; the variants alternate within each round")
	fs.IntVar(&c.bulk, "bulk", 1000, "documents per InsertMany, and per Find")
	fs.IntVar(&c.bulkRounds, "bulk-rounds", 60, "InsertMany calls, and Find calls, per variant, alternating")
	fs.IntVar(&c.workers, "workers", 8, "goroutines of the concurrent inserts")
	fs.IntVar(&c.concurrentRounds, "concurrent-rounds", 20, "rounds of concurrent inserts")
	fs.IntVar(&c.updateRounds, "update-rounds", 60, "rounds of updates, and of versioned saves")
	fs.IntVar(&c.manyRounds, "many-rounds", 20, "rounds of 5 UpdateMany of 100 documents")
	fs.IntVar(&c.outboxRounds, "outbox-rounds", 60, "rounds of outbox inserts, of relay deliveries, and of the relay's lag")
	fs.StringVar(&c.jsonFile, "json", "", "also write the figures to this file")
	fs.Func("only", "run only these phases, comma-separated (insert, mgm, tracing, ...; see the progress lines); all when not given", func(v string) error {
		c.only = map[string]bool{}
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if !slices.ContainsFunc(phases, func(p phase) bool { return p.name == name }) {
				return fmt.Errorf("no phase %q", name)
			}
			c.only[name] = true
		}
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./example_app bench [flags]\n\nMeasures the library side by side with the raw driver, alternating the variants in rounds.\nOne progress line per phase goes to stderr.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.inserts < 10 || c.rounds < 1 || c.bulk < 1 || c.bulkRounds < 1 || c.workers < 1 || c.concurrentRounds < 1 || c.updateRounds < 1 || c.manyRounds < 1 || c.outboxRounds < 1 {
		fmt.Fprintln(out, "bench: -n must be ≥ 10, and the other counts ≥ 1")
		return 2
	}
	ctx := context.Background()
	uri, stop, err := sf.start(ctx, out)
	if err != nil {
		return fail(out, err)
	}
	defer stop()
	figs, err := bench(ctx, newProgress(progressOut), uri, sf.db, c)
	if err != nil {
		return fail(out, err)
	}
	if both {
		figs2, err := otherBench(uri, sf.db+"_v2", args, progressOut)
		if err != nil {
			return fail(out, err)
		}
		reportBoth(out, figs, figs2)
	} else {
		report(out, figs)
	}
	if c.jsonFile != "" {
		b, _ := json.MarshalIndent(figs, "", "  ")
		if err := os.WriteFile(c.jsonFile, append(b, '\n'), 0o644); err != nil {
			return fail(out, err)
		}
	}
	return 0
}

// A phase measures one or more figures, alternating the library with its
// raw twin in rounds (env.alternate). To add a figure, write a phase and
// list it here; the table and -json follow this order.
var phases = []phase{
	{"insert", benchInsert},
	{"mgm", benchMgm},
	{"tracing", benchTracing},
	{"bulk", benchBulk},
	{"concurrent insert", benchConcurrentInsert},
	{"update", benchUpdate},
	{"update many", benchUpdateMany},
	{"versioned save", benchVersionedSave},
	{"find", benchFind},
	{"tenancy", benchTenancy},
	{"soft delete find", benchSoftDeleteFind},
	{"encryption", benchEncryption},
	{"outbox insert", benchOutboxInsert},
	{"relay", benchRelay},
	{"relay lag", benchLag},
	{"relay scale", benchRelayScale},
	{"allocator and bus", benchMicro},
}

// phase is a named part of the bench.
type phase struct {
	name string
	run  func(env *benchEnv) ([]figure, error)
}

// benchEnv is what the phases share: one database, a bus with AutoKeys,
// the demo's users and their raw twin collection.
type benchEnv struct {
	ctx      context.Context
	uri      string // the server's, for clients of the phases' own
	c        benchConfig
	progress *progress
	db       *mongo.Database
	outboxDB *mongo.Database // db on one connection: the outbox asks for it on FerretDB
	keys     *autokeys.Keys
	bus      *events.Bus // AutoKeys is registered
	users    *repo.Repository[*User]
	rawUsers *mongo.Collection // the same unique index as users
	seq      atomic.Int64      // the raw side's numbers
}

// rawDoc is a User as the raw side writes it: its keys made by hand.
func (env *benchEnv) rawDoc() *User {
	return &User{UserID: uuid.NewString(), LongID: env.seq.Add(1), UserName: "bench"}
}

// rawCollection returns a collection with the unique indexes AutoKeys
// makes on longId and userId, so that both sides write to the same kind of
// table.
func (env *benchEnv) rawCollection(name string) (*mongo.Collection, error) {
	coll := env.db.Collection(name)
	_, err := coll.Indexes().CreateMany(env.ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "longId", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "userId", Value: 1}}, Options: options.Index().SetUnique(true)},
	})
	return coll, err
}

// alternate runs rounds rounds of n operations per variant (per goroutine
// for a concurrent one), each round in a rotated order so that drift in
// the machine's speed falls on all variants alike, and shows the rounds
// done on the progress line of phase.
func (env *benchEnv) alternate(phase string, rounds, n int, vs ...*variant) error {
	env.progress.begin(phase, rounds, "rounds")
	defer env.progress.end()
	for r := range rounds {
		for k := range vs {
			if err := vs[(r+k)%len(vs)].run(env.ctx, n); err != nil {
				return err
			}
		}
		env.progress.step()
	}
	return nil
}

func bench(ctx context.Context, p *progress, uri, dbName string, c benchConfig) ([]figure, error) {
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

	one, err := mongo.Connect(ctx, options.Client().ApplyURI(uri).SetRegistry(model.Registry()).SetMaxPoolSize(1))
	if err != nil {
		return nil, err
	}
	defer one.Disconnect(ctx)
	env := &benchEnv{ctx: ctx, uri: uri, c: c, progress: p, db: db, outboxDB: one.Database(db.Name()), bus: events.NewBus()}
	if env.keys, err = autokeys.New(db); err != nil {
		return nil, err
	}
	defer env.keys.Close(context.Background()) // give unused numbers back
	env.bus.Register(env.keys)
	if env.users, err = repo.New[*User](env.bus, repo.WithDatabase(db)); err != nil {
		return nil, err
	}
	if env.rawUsers, err = env.rawCollection("raw_users"); err != nil {
		return nil, err
	}
	// Warm up both paths once: indexes, counters, connections.
	if err := env.users.Insert(ctx, &User{UserName: "warm"}); err != nil {
		return nil, err
	}
	if _, err := env.rawUsers.InsertOne(ctx, env.rawDoc()); err != nil {
		return nil, err
	}
	var figs []figure
	for _, ph := range phases {
		if len(c.only) > 0 && !c.only[ph.name] {
			continue
		}
		f, err := ph.run(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ph.name, err)
		}
		figs = append(figs, f...)
	}
	return figs, nil
}

func mongotestName(base string) string {
	return fmt.Sprintf("%s_%d_%d", base, os.Getpid(), time.Now().UnixNano()%1e6)
}
