package main

import (
	"context"
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

// scaleEnv is what the variants of the relay scale phase share: three
// clients of one connection each, as three processes have, the repository
// that stores the backlog, and the relays that deliver it, one per client.
type scaleEnv struct {
	ctx       context.Context
	backlog   int
	dbs       []*mongo.Database
	orders    *repo.Repository[*BenchOrder]
	relays    []*outbox.Relay
	delivered atomic.Int64
	done      atomic.Pointer[context.CancelFunc] // ends the relays' Runs once the backlog is out
}

// benchRelayScale alternates rounds in which one relay, three relays at
// once, one raw client and three raw clients at once work through a
// backlog stored beforehand (untimed), one event per document, in a
// database of its own (its relays lease for scaleLease, the other
// phases' for the default). The relays Run, with their own poll interval,
// until the backlog is out. The raw clients do what a relay cannot do
// without for each document, its findAndModify by _id (see raw),
// taking the documents from one shared list: their ratio is how far the
// server lets three clients outrun one, the bound of relay_scale_ratio.
func benchRelayScale(env *benchEnv) ([]figure, error) {
	s, err := newScaleEnv(env)
	if err != nil {
		return nil, err
	}
	defer s.dbs[0].Drop(context.Background())
	for _, db := range s.dbs {
		defer db.Client().Disconnect(context.Background())
	}
	one, three := &variant{name: "one relay"}, &variant{name: "three relays"}
	rawOne, rawThree := &variant{name: "one raw client"}, &variant{name: "three raw clients"}
	timed := func(v *variant, k int, work func(k int) error) func() error {
		return func() error {
			if err := s.store(); err != nil {
				return err
			}
			start := time.Now()
			if err := work(k); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			v.rounds = append(v.rounds, round{dur: time.Since(start), lat: make([]time.Duration, s.backlog)})
			v.n += s.backlog
			return nil
		}
	}
	rounds := max(3, env.c.outboxRounds/10)
	env.progress.begin("relay scale", rounds, "rounds")
	defer env.progress.end()
	for r := range rounds {
		steps := []func() error{timed(one, 1, s.run), timed(three, 3, s.run), timed(rawOne, 1, s.raw), timed(rawThree, 3, s.raw)}
		for k := range steps {
			if err := steps[(r+k)%len(steps)](); err != nil {
				return nil, err
			}
		}
		env.progress.step()
	}
	med, ci, sp := throughputRatio(three, one)
	raw, rci, rsp := throughputRatio(rawThree, rawOne)
	return []figure{
		{"relay_scale_ratio", med, ci, fmt.Sprintf("three relays delivering a backlog of %d events (one per document, no-op publisher, %v lease, the default batch, a connection each, Run) at %.0f events/s ÷ one relay at %.0f/s; %s; against its bound (relay_scale_raw_ratio) %.2f",
			s.backlog, scaleLease, three.perSec(), one.perSec(), sp, med/raw), "≥ 1.0"},
		{"relay_scale_raw_ratio", raw, rci, fmt.Sprintf("three raw clients, a connection each, doing to each document of the same backlog the write a relay does, a findAndModify by _id (%.0f/s), ÷ one raw client (%.0f/s); %s: how far the server lets three clients outrun one at the relay's work, the bound of relay_scale_ratio",
			rawThree.perSec(), rawOne.perSec(), rsp), "reported"},
	}, nil
}

// newScaleEnv connects the phase's three clients and makes its relays.
func newScaleEnv(env *benchEnv) (*scaleEnv, error) {
	s := &scaleEnv{ctx: env.ctx, backlog: 6 * env.c.inserts}
	for range 3 {
		c, err := mongo.Connect(s.ctx, options.Client().ApplyURI(env.uri).SetRegistry(model.Registry()).SetMaxPoolSize(1))
		if err != nil {
			return nil, err
		}
		s.dbs = append(s.dbs, c.Database(env.outboxDB.Name()+"_scale"))
	}
	bus := events.NewBus()
	bus.Register(outbox.New())
	var err error
	if s.orders, err = repo.New[*BenchOrder](bus, repo.WithDatabase(s.dbs[0])); err != nil {
		return nil, err
	}
	count := outbox.PublisherFunc(func(context.Context, outbox.Message) error {
		if s.delivered.Add(1) == int64(s.backlog) {
			(*s.done.Load())()
		}
		return nil
	})
	for _, db := range s.dbs {
		r, err := outbox.NewRelay(db, count, outbox.WithCollections(s.orders.Collection().Name()), outbox.WithLease(scaleLease))
		if err != nil {
			return nil, err
		}
		s.relays = append(s.relays, r)
	}
	return s, nil
}

// store empties the collection and stores the backlog.
func (s *scaleEnv) store() error {
	if _, err := s.orders.Collection().DeleteMany(s.ctx, bson.D{}); err != nil {
		return err
	}
	batch := make([]*BenchOrder, 0, 100)
	for i := range s.backlog {
		o := &BenchOrder{Status: "placed"}
		o.Record("order.placed", bson.D{{Key: "n", Value: i}})
		if batch = append(batch, o); len(batch) == cap(batch) || i == s.backlog-1 {
			if err := s.orders.InsertMany(s.ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// run Runs k relays at once until they have delivered the backlog
// together, or for ten minutes at most.
func (s *scaleEnv) run(k int) error {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Minute)
	defer cancel()
	s.delivered.Store(0)
	s.done.Store(&cancel)
	var wg sync.WaitGroup
	for _, r := range s.relays[:k] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.Run(ctx)
		}()
	}
	wg.Wait()
	if n := s.delivered.Load(); n < int64(s.backlog) {
		return fmt.Errorf("%d of %d delivered in 10 minutes", n, s.backlog)
	}
	return nil
}

// raw does to each document of the backlog the write a relay does, with
// k clients at once taking the documents from one list: a findAndModify
// by _id that removes the event and returns the document as it was (see
// the relay's settle), the one command a relay sends per document on
// FerretDB.
func (s *scaleEnv) raw(k int) error {
	coll := s.orders.Collection().Name()
	cur, err := s.dbs[0].Collection(coll).Find(s.ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: outbox.Field + ".q", Value: 1}}))
	if err != nil {
		return err
	}
	var docs []struct {
		ID  any `bson:"_id"`
		Box struct {
			Queue []string `bson:"q"`
		} `bson:"_outbox"`
	}
	if err := cur.All(s.ctx, &docs); err != nil {
		return err
	}
	var next atomic.Int64
	errs := make([]error, k)
	var wg sync.WaitGroup
	for w := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.dbs[w].Collection(coll)
			for i := next.Add(1) - 1; i < int64(len(docs)) && errs[w] == nil; i = next.Add(1) - 1 {
				byID := bson.D{{Key: "_id", Value: docs[i].ID}}
				errs[w] = c.FindOneAndUpdate(s.ctx, byID, bson.D{
					{Key: "$pullAll", Value: bson.D{{Key: outbox.Field + ".q", Value: docs[i].Box.Queue}}},
					{Key: "$unset", Value: bson.D{{Key: outbox.Field + ".e", Value: ""}, {Key: outbox.Field + ".due", Value: ""}}}},
					options.FindOneAndUpdate().SetReturnDocument(options.Before)).Err()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
