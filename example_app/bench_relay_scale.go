package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// scaleLease is the lease of the relay scale phase: short, so that a relay
// that claims more than it delivers within its lease shows.
const scaleLease = time.Second

// benchRelayScale alternates rounds in which one relay, and then three
// relays at once, deliver a backlog stored beforehand (untimed), one event
// per document, in a database of its own (its relays lease for scaleLease,
// the other phases' for the default). Each relay has a client with one
// connection of its own, as relays in three processes have.
func benchRelayScale(env *benchEnv) ([]figure, error) {
	ctx := env.ctx
	backlog := 6 * env.c.inserts
	rounds := max(3, env.c.outboxRounds/10)
	var dbs []*mongo.Database
	for range 3 {
		c, err := mongo.Connect(ctx, options.Client().ApplyURI(env.uri).SetRegistry(model.Registry()).SetMaxPoolSize(1))
		if err != nil {
			return nil, err
		}
		defer c.Disconnect(context.Background())
		dbs = append(dbs, c.Database(env.outboxDB.Name()+"_scale"))
	}
	defer dbs[0].Drop(context.Background())
	bus := events.NewBus()
	bus.Register(outbox.New())
	orders, err := repo.New[*BenchOrder](bus, repo.WithDatabase(dbs[0]))
	if err != nil {
		return nil, err
	}
	coll := orders.Collection().Name()
	nop := outbox.PublisherFunc(func(context.Context, outbox.Message) error { return nil })
	var relays []*outbox.Relay
	for _, db := range dbs {
		r, err := outbox.NewRelay(db, nop, outbox.WithCollections(coll), outbox.WithLease(scaleLease))
		if err != nil {
			return nil, err
		}
		relays = append(relays, r)
	}
	store := func() error {
		if _, err := orders.Collection().DeleteMany(ctx, bson.D{}); err != nil {
			return err
		}
		batch := make([]*BenchOrder, 0, 100)
		for i := range backlog {
			o := &BenchOrder{Status: "placed"}
			o.Record("order.placed", bson.D{{Key: "n", Value: i}})
			if batch = append(batch, o); len(batch) == cap(batch) || i == backlog-1 {
				if err := orders.InsertMany(ctx, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	}
	one, three := &variant{name: "one relay"}, &variant{name: "three relays"}
	timed := func(v *variant, rs []*outbox.Relay) func() error {
		return func() error {
			if err := store(); err != nil {
				return err
			}
			d, err := drainAll(ctx, rs, backlog)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			v.rounds = append(v.rounds, round{dur: d, lat: make([]time.Duration, backlog)})
			v.n += backlog
			return nil
		}
	}
	env.progress.begin("relay scale", rounds, "rounds")
	defer env.progress.end()
	for r := range rounds {
		steps := []func() error{timed(one, relays[:1]), timed(three, relays)}
		for k := range steps {
			if err := steps[(r+k)%len(steps)](); err != nil {
				return nil, err
			}
		}
		env.progress.step()
	}
	med, ci, sp := throughputRatio(three, one)
	return []figure{{"relay_scale_ratio", med, ci, fmt.Sprintf("three relays delivering a backlog of %d events (one per document, no-op publisher, %v lease, the default batch, a connection each) at %.0f events/s ÷ one relay at %.0f/s; %s",
		backlog, scaleLease, three.perSec(), one.perSec(), sp), "≥ 1.0"}}, nil
}

// drainAll drains with every relay of rs at once until they have
// delivered n messages together, and returns how long that took. A relay
// whose Drain found nothing it could take (the others hold the rest)
// tries again a millisecond later.
func drainAll(ctx context.Context, rs []*outbox.Relay, n int) (time.Duration, error) {
	var got atomic.Int64
	start := time.Now()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got.Load() < int64(n) {
				if time.Since(start) > 10*time.Minute {
					errs[i] = fmt.Errorf("%d of %d delivered in 10 minutes", got.Load(), n)
					return
				}
				d, err := r.Drain(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				if got.Add(int64(d)); d == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), errors.Join(errs...)
}
