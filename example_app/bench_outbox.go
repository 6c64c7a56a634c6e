package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// BenchOrder records domain events in the outbox.
type BenchOrder struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Status           string `bson:"status"`
}

// outboxOrders returns a repository of BenchOrder on a bus with the
// outbox policy alone.
func outboxOrders(env *benchEnv) (*repo.Repository[*BenchOrder], error) {
	bus := events.NewBus()
	bus.Register(outbox.New())
	return repo.New[*BenchOrder](bus, repo.WithDatabase(env.outboxDB))
}

// benchOutboxInsert: an Insert that records one event against the same
// Insert recording none.
func benchOutboxInsert(env *benchEnv) ([]figure, error) {
	orders, err := outboxOrders(env)
	if err != nil {
		return nil, err
	}
	none := &variant{name: "no event", op: func(ctx context.Context, _ int) error {
		return orders.Insert(ctx, &BenchOrder{Status: "placed"})
	}}
	one := &variant{name: "one event", op: func(ctx context.Context, i int) error {
		o := &BenchOrder{Status: "placed"}
		o.Record("order.placed", bson.D{{Key: "n", Value: i}})
		return orders.Insert(ctx, o)
	}}
	// The raw twins insert, with the driver, copies of the documents the
	// two Inserts store (a new _id each), into a collection of their own:
	// their ratio is what storing the event costs the server.
	rawNone, rawOne, err := rawTwins(env, orders)
	if err != nil {
		return nil, err
	}
	if err := env.alternate("outbox insert", env.c.outboxRounds, env.c.inserts, none, one, rawNone, rawOne); err != nil {
		return nil, err
	}
	r, ci, sp := throughputRatio(one, none)
	floor, fci, fsp := throughputRatio(rawOne, rawNone)
	return []figure{
		{"outbox_insert_ratio", r, ci, fmt.Sprintf("repo.Insert recording one event %.0f/s ÷ the same Insert recording none %.0f/s; %s; against its floor (outbox_insert_floor_ratio) %.2f",
			one.perSec(), none.perSec(), sp, r/floor), "≥ 0.95"},
		{"outbox_insert_floor_ratio", floor, fci, fmt.Sprintf("the raw driver inserting a copy of the document an Insert recording one event stores (%.0f/s) ÷ inserting a copy of the one it stores recording none (%.0f/s); %s: the server's cost of storing the event, the floor of outbox_insert_ratio",
			rawOne.perSec(), rawNone.perSec(), fsp), "reported"},
	}, nil
}

// rawTwins returns variants that insert, with the driver, copies of the
// document an Insert of orders stores with no event and with one, each
// with a new _id.
func rawTwins(env *benchEnv, orders *repo.Repository[*BenchOrder]) (none, one *variant, err error) {
	ctx := env.ctx
	coll := env.outboxDB.Collection("bench_outbox_raw")
	stored := func(record bool) (bson.D, error) {
		o := &BenchOrder{Status: "placed"}
		if record {
			o.Record("order.placed", bson.D{{Key: "n", Value: 0}})
		}
		if err := orders.Insert(ctx, o); err != nil {
			return nil, err
		}
		var doc bson.D
		err := orders.Collection().FindOne(ctx, bson.D{{Key: "_id", Value: o.ID}}).Decode(&doc)
		return doc, err
	}
	twin := func(name string, record bool) (*variant, error) {
		doc, err := stored(record)
		if err != nil {
			return nil, err
		}
		return &variant{name: name, op: func(ctx context.Context, _ int) error {
			doc[0] = bson.E{Key: "_id", Value: primitive.NewObjectID()}
			_, err := coll.InsertOne(ctx, doc)
			return err
		}}, nil
	}
	if none, err = twin("raw, no event", false); err != nil {
		return nil, nil, err
	}
	one, err = twin("raw, one event", true)
	return none, one, err
}

// benchRelay alternates rounds of n raw InsertOne with rounds in which one
// relay, with a publisher that does nothing, delivers n events stored
// beforehand (untimed), one per document, in a collection emptied before
// each round.
func benchRelay(env *benchEnv) ([]figure, error) {
	ctx, n := env.ctx, env.c.inserts
	orders, err := outboxOrders(env)
	if err != nil {
		return nil, err
	}
	coll := orders.Collection().Collection
	relay, err := outbox.NewRelay(env.outboxDB, outbox.PublisherFunc(func(context.Context, outbox.Message) error { return nil }),
		outbox.WithCollections(coll.Name()))
	if err != nil {
		return nil, err
	}
	raw := &variant{name: "raw", op: func(ctx context.Context, _ int) error {
		_, err := env.rawUsers.InsertOne(ctx, env.rawDoc())
		return err
	}}
	rel := &variant{name: "relay"}
	upd := &variant{name: "raw removal"}
	// store empties the collection and stores n events, one per document,
	// and returns the documents' and the events' IDs.
	type stored struct{ doc, event any }
	store := func() ([]stored, error) {
		if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
			return nil, err
		}
		out := make([]stored, n)
		for i := range out {
			o := &BenchOrder{Status: "placed"}
			o.Record("order.placed", bson.D{{Key: "n", Value: i}})
			ev := o.Recorded()[0].ID
			if err := orders.Insert(ctx, o); err != nil {
				return nil, err
			}
			out[i] = stored{o.ID, ev}
		}
		return out, nil
	}
	timeRelay := func() error {
		if _, err := store(); err != nil {
			return err
		}
		start := time.Now()
		for got := 0; got < n; {
			d, err := relay.Drain(ctx)
			if err != nil {
				return err
			}
			if d == 0 {
				return fmt.Errorf("relay: %d of %d delivered, then nothing", got, n)
			}
			got += d
		}
		rel.rounds = append(rel.rounds, round{dur: time.Since(start), lat: make([]time.Duration, n)})
		rel.n += n
		return nil
	}
	// timeRemoval removes each stored event with one raw update by _id:
	// the one write per document a relay cannot do without.
	timeRemoval := func() error {
		docs, err := store()
		if err != nil {
			return err
		}
		base := upd.n
		upd.op = func(ctx context.Context, i int) error {
			d := docs[i-base]
			byID := bson.D{{Key: "_id", Value: d.doc}}
			if err := coll.FindOne(ctx, byID).Err(); err != nil {
				return err
			}
			_, err := coll.UpdateOne(ctx, byID, bson.D{
				{Key: "$pullAll", Value: bson.D{{Key: outbox.Field + ".q", Value: bson.A{d.event}}}},
				{Key: "$unset", Value: bson.D{{Key: outbox.Field + ".e", Value: ""}, {Key: outbox.Field + ".due", Value: ""}}}})
			return err
		}
		return upd.run(ctx, n)
	}
	env.progress.begin("relay", env.c.outboxRounds, "rounds")
	defer env.progress.end()
	for r := range env.c.outboxRounds {
		steps := []func() error{func() error { return raw.run(ctx, n) }, timeRelay, timeRemoval}
		for k := range steps {
			if err := steps[(r+k)%len(steps)](); err != nil {
				return nil, err
			}
		}
		env.progress.step()
	}
	med, ci, sp := throughputRatio(rel, raw)
	floor, fci, fsp := throughputRatio(upd, raw)
	share, sci, ssp := throughputRatio(rel, upd)
	return []figure{
		{"relay_ratio", med, ci, fmt.Sprintf("one relay delivering %.0f events/s (no-op publisher, one event per document, %d per round) ÷ raw InsertOne %.0f/s; %s",
			rel.perSec(), n, raw.perSec(), sp), "≥ 1.0"},
		{"relay_floor_ratio", floor, fci, fmt.Sprintf("the relay's raw floor, a read and an update by _id per document done with the driver (%.0f/s), ÷ raw InsertOne (%.0f/s); %s: the bound relay_ratio has on this server",
			upd.perSec(), raw.perSec(), fsp), "reported"},
		{"relay_to_floor_ratio", share, sci, fmt.Sprintf("one relay's %.0f events/s ÷ its raw floor's %.0f/s (relay_floor_ratio); %s",
			rel.perSec(), upd.perSec(), ssp), "≥ 0.90"},
	}, nil
}

// benchLag writes n orders per round, one event each, while a relay Runs
// with a 50 ms poll interval, waits until they are delivered, and returns
// the 99th percentile of the time from Record to Publish.
func benchLag(env *benchEnv) ([]figure, error) {
	ctx, n := env.ctx, env.c.inserts
	orders, err := outboxOrders(env)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var lags []time.Duration
	const poll = 50 * time.Millisecond
	relay, err := outbox.NewRelay(env.outboxDB, outbox.PublisherFunc(func(_ context.Context, m outbox.Message) error {
		mu.Lock()
		lags = append(lags, time.Since(m.Time))
		mu.Unlock()
		return nil
	}), outbox.WithCollections(orders.Collection().Name()), outbox.WithPollInterval(poll))
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	defer func() { cancel(); <-done }()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(lags) }
	env.progress.begin("relay lag", env.c.outboxRounds, "rounds")
	defer env.progress.end()
	written := 0
	for range env.c.outboxRounds {
		for i := range n {
			o := &BenchOrder{Status: "placed"}
			o.Record("order.placed", bson.D{{Key: "n", Value: i}})
			if err := orders.Insert(ctx, o); err != nil {
				return nil, err
			}
		}
		written += n
		for deadline := time.Now().Add(time.Minute); count() < written; {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("relay lag: %d of %d delivered in a minute", count(), written)
			}
			time.Sleep(time.Millisecond)
		}
		// Each round starts on an empty collection: FerretDB scans the
		// whole collection for the relay's query and for each update, which
		// would make the figure the scans' and not the relay's.
		if _, err := orders.Collection().DeleteMany(ctx, bson.D{}); err != nil {
			return nil, err
		}
		env.progress.step()
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lags)
	p99 := lags[len(lags)*99/100]
	return []figure{{"relay_lag_p99_ms", float64(p99) / float64(time.Millisecond), nil, fmt.Sprintf("Record to Publish, %d events written %d at a time (the collection emptied between rounds) while Run polls every %v: p50 %v, p99 %v (Message.Time keeps milliseconds)",
		len(lags), n, poll, lags[len(lags)/2].Round(time.Millisecond), p99.Round(time.Millisecond)), "reported"}}, nil
}
