package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// DeadLetters is the collection, in the relay's database, that holds each
// message that failed WithMaxAttempts times, or once with an error no
// attempt can overcome (see Publisher): the message, its last error
// and its attempts, under the message's ID. A relay counts it (Stats) and
// logs each message it moves there.
const DeadLetters = "outbox_dead"

// Leases is the collection, in the relay's database, of the relays'
// leases on documents (see Relay).
const Leases = "outbox_leases"

// Seqs is the collection, in the relay's database, that holds for each
// deleted document a relay removed the last Seq of its events, under the
// collection and the _id, so that a document inserted again with that _id
// continues its Seq instead of starting again at 1 (a consumer that
// orders or de-duplicates by subject and Seq would drop its events). It
// grows by one small document per removed _id that had events; relays
// read it only while it is not empty.
const Seqs = "outbox_seqs"

// RelayOption configures NewRelay.
type RelayOption func(*relayConfig)

type relayConfig struct {
	collections []string
	lease       time.Duration
	maxAttempts int
	backoff     func(attempt int) time.Duration
	poll        time.Duration
	batch       int
	logger      *slog.Logger
	atomic      *bool         // set by tests: how the server applies filtered writes
	maxHung     int64         // publishes running at once, hung ones included, before the relay starts no more
	countEvery  time.Duration // how often at most a Drain counts the pending events; tests shorten it
	clock       Clock
	place       func(n int) int // where in n documents a chunk after a collision starts; tests fix it
}

// WithCollections serves these collections. By default a relay serves the
// collections that Sources names, read again at every Drain.
func WithCollections(names ...string) RelayOption {
	return func(c *relayConfig) { c.collections = append(c.collections, names...) }
}

// WithLease sets how long a relay owns a document's events once it has
// claimed them; the default is 30 seconds. It must outlast the delivery of
// one batch of a document's events; a relay that stops (or dies) keeps
// its documents from the others no longer than this. Every relay of a
// database leases for as long: the first records its length in Leases,
// and Drain fails with ErrInvalidRelay for a relay with another. NewRelay
// refuses a lease shorter than a second or longer than a day. The relays'
// clocks must agree within a third of the lease: a relay warns when it
// reads the word of one whose clock runs further ahead (see Relays).
func WithLease(d time.Duration) RelayOption { return func(c *relayConfig) { c.lease = d } }

// minLease and maxLease bound WithLease: a shorter lease ends before a
// relay can read, claim and publish a document, so that the relay would
// deliver nothing; a longer one keeps a stopped relay's documents from
// the others for more than a day.
const (
	minLease = time.Second
	maxLease = 24 * time.Hour
)

// WithMaxAttempts sets how many times a message is published before it
// moves to DeadLetters; the default is 10.
func WithMaxAttempts(n int) RelayOption { return func(c *relayConfig) { c.maxAttempts = n } }

// WithBackoff sets how long a document waits after its message failed its
// attempt-th delivery; the default doubles from one second up to a minute.
// A wait longer than a day is a day: a document held further ahead is
// held by no relay, and is due.
func WithBackoff(f func(attempt int) time.Duration) RelayOption {
	return func(c *relayConfig) { c.backoff = f }
}

// WithPollInterval sets how long Run waits after a Drain that found
// nothing to deliver, or only documents other relays hold; the default is
// one second.
func WithPollInterval(d time.Duration) RelayOption { return func(c *relayConfig) { c.poll = d } }

// WithBatch sets how many documents a relay reads at once for itself, and
// claims at most at once; the default is 100. It reads as many for each
// relay that serves the collection (see Relays), up to 1,000, and claims
// its share in chunks of as many as it delivers, at its measured pace,
// within the lease a claim gives it.
func WithBatch(n int) RelayOption { return func(c *relayConfig) { c.batch = n } }

// WithLogger logs what the relay does not return as an error: dead
// letters, the growth of DeadLetters, a Run's failed Drain. The default is
// slog.Default().
func WithLogger(l *slog.Logger) RelayOption { return func(c *relayConfig) { c.logger = l } }

// ErrInvalidRelay is returned, wrapped, by NewRelay for an argument it
// cannot use, and by Drain for a WithLease other than the one the
// database's relays use (see WithLease).
var ErrInvalidRelay = errors.New("outbox: invalid relay argument")

// ErrPublishHung is returned by Drain when MaxHungPublishes of the relay's
// publishes are still running, most of them given up on at their deadline
// (see Publisher): the relay starts no more until some return, so that a
// Publisher that ignores its context cannot pile up goroutines without
// bound.
var ErrPublishHung = errors.New("outbox: publishes that ignored their deadline have not returned")

// MaxHungPublishes is how many of a relay's publishes may run at once,
// those it gave up on at their deadline included; all of its Drains
// together start no more.
const MaxHungPublishes = 64

func defaultBackoff(attempt int) time.Duration {
	d := time.Second << min(max(attempt-1, 0), 6)
	return min(d, time.Minute)
}

// Relay delivers the events that the outbox stored, at least once and in
// order per document: a message with Seq n+1 is published only after Seq n
// was published or moved to DeadLetters. A failed publish is retried
// after WithBackoff; meanwhile the document's later events wait, and
// other documents keep flowing. After WithMaxAttempts the message moves to
// DeadLetters and the document's next event follows.
//
// Relays in several processes share the work: each claims its share of
// a collection's documents (see Relays), through leases. A relay claims
// a document by inserting a lease document with a unique _id made of
// the document and a time slot of WithLease's length; the server's unique
// index lets one relay have each slot, on every server, FerretDB's
// non-atomic findAndModify included. A relay publishes only while its
// lease holds, with a third of it to spare, and removes from the document
// only the events it has published, by ID: removing one again is a no-op,
// so a relay whose lease ran out while it published can remove nothing
// another relay has not published too. Duplicates come only from a relay
// that stops between publishing and removing: consumers de-duplicate on
// Message.ID.
//
// A relay is a system process: it reads documents of every tenant. It is
// safe for concurrent use, though one Run per relay is enough: concurrent
// Drains of one relay share its leases, and each document goes to one of
// them. On FerretDB its Drain fails with ErrUnsupported unless its
// client has a single connection, as the Outbox's writes do (see Outbox).
type Relay struct {
	db      *mongo.Database
	pub     Publisher
	cfg     relayConfig
	id      string
	leases  *leases
	indexed sync.Map // collection name -> struct{}
	busy    sync.Map // lease key -> struct{}: documents a Drain of this relay works on
	shares  sync.Map // collection name -> *share

	delivered, failed, dead, removed, deadTotal atomic.Int64
	lastCount                                   atomic.Int64 // unix nanoseconds of the last DeadLetters count
	pending, oldest, lastPending, counted       atomic.Int64 // the last count of undelivered events, unix milliseconds of the oldest, unix nanoseconds of the last try and of the count
	hung                                        atomic.Int64 // publishes abandoned at their deadline that have not returned
	running                                     atomic.Int64 // publishes started that have not returned, hung ones included
	pace                                        atomic.Int64 // nanoseconds per document delivered, a moving average (see measure)
}

// NewRelay returns a relay that delivers the events stored in db's
// collections to p.
func NewRelay(db *mongo.Database, p Publisher, opts ...RelayOption) (*Relay, error) {
	if db == nil || p == nil {
		return nil, fmt.Errorf("%w: NewRelay needs a database and a publisher", ErrInvalidRelay)
	}
	c := relayConfig{lease: 30 * time.Second, maxAttempts: 10, backoff: defaultBackoff, poll: time.Second, batch: 100, logger: slog.Default(), maxHung: MaxHungPublishes, countEvery: 10 * time.Second, clock: systemClock{}, place: rand.IntN}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.lease < minLease || c.lease > maxLease:
		return nil, fmt.Errorf("%w: WithLease(%v): want %v to %v", ErrInvalidRelay, c.lease, minLease, maxLease)
	case c.maxAttempts < 1:
		return nil, fmt.Errorf("%w: WithMaxAttempts(%d): want ≥ 1", ErrInvalidRelay, c.maxAttempts)
	case c.backoff == nil:
		return nil, fmt.Errorf("%w: WithBackoff(nil)", ErrInvalidRelay)
	case c.poll <= 0:
		return nil, fmt.Errorf("%w: WithPollInterval(%v): want > 0", ErrInvalidRelay, c.poll)
	case c.batch < 1:
		return nil, fmt.Errorf("%w: WithBatch(%d): want ≥ 1", ErrInvalidRelay, c.batch)
	case c.logger == nil:
		return nil, fmt.Errorf("%w: WithLogger(nil)", ErrInvalidRelay)
	case c.clock == nil:
		return nil, fmt.Errorf("%w: WithRelayClock(nil)", ErrInvalidRelay)
	}
	id := uuid.NewString()
	return &Relay{db: db, pub: p, cfg: c, id: id, leases: newLeases(db.Collection(Leases), id, c.lease, c.clock)}, nil
}

// Stats are a relay's counts since it was created.
type Stats struct {
	Delivered    int64 // messages published and removed from their documents
	Failed       int64 // publish attempts that failed
	DeadLettered int64 // messages this relay moved to DeadLetters
	DeadLetters  int64 // messages in DeadLetters when last counted, by any relay
	Removed      int64 // deleted documents removed once their events were out
	Hung         int64 // publishes abandoned at their deadline that have not returned yet
	// Pending is how many undelivered events the collections the relay
	// serves held when it last counted them, at Counted, and Oldest when
	// the oldest of them was recorded (zero when none). A Drain counts
	// them after its deliveries, at most every ten seconds; Counted is
	// zero until then. OldestAge is how long ago, by the relay's clock
	// (WithRelayClock) when Stats was called, Oldest was (zero when none).
	Pending   int64
	Oldest    time.Time
	OldestAge time.Duration
	Counted   time.Time
}

// Stats returns the relay's counts.
func (r *Relay) Stats() Stats {
	s := Stats{Delivered: r.delivered.Load(), Failed: r.failed.Load(), DeadLettered: r.dead.Load(),
		DeadLetters: r.deadTotal.Load(), Removed: r.removed.Load(), Hung: r.hung.Load(), Pending: r.pending.Load()}
	if ms := r.oldest.Load(); ms != 0 {
		s.Oldest = time.UnixMilli(ms).UTC()
		s.OldestAge = max(r.now().Sub(s.Oldest), 0)
	}
	if ns := r.counted.Load(); ns != 0 {
		s.Counted = time.Unix(0, ns).UTC()
	}
	return s
}

// Run delivers what is due, again and again, until ctx ends, and then
// returns nil, once it has removed its documents from Relays, so that the
// other relays share its documents at once. After a Drain that delivered
// nothing, or that ended on due documents other relays hold, it waits
// WithPollInterval; errors are logged, and the next poll tries again.
func (r *Relay) Run(ctx context.Context) error {
	defer r.leave(context.WithoutCancel(ctx))
	for {
		n, held, err := r.drainAll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			r.cfg.logger.WarnContext(ctx, "outbox: relay drain failed; retrying after the poll interval", "relay", r.id, "error", err)
		}
		if n > 0 && err == nil && !held {
			continue
		}
		if !r.sleep(ctx, r.cfg.poll) {
			return nil
		}
	}
}

// Drain delivers, once, the events that are due now in the collections it
// serves and that no other relay holds, and returns how many messages it
// delivered; of the shares of other relays serving them (see Relays), it
// takes what they have not claimed until its claims keep meeting theirs.
// Events in backoff wait for a later Drain.
func (r *Relay) Drain(ctx context.Context) (int, error) {
	n, _, err := r.drainAll(ctx)
	return n, err
}

// drainAll is Drain; it also reports whether, in every collection, what
// was left due when it ended was held by other relays.
func (r *Relay) drainAll(ctx context.Context) (int, bool, error) {
	if err := serialized(ctx, r.db, "the relay's client"); err != nil {
		return 0, false, err
	}
	if err := r.leases.agree(ctx); err != nil {
		return 0, false, err
	}
	colls, err := r.collections(ctx)
	if err != nil {
		return 0, false, err
	}
	total, allHeld := 0, len(colls) > 0
	var errs []error
	for _, c := range colls {
		n, held, err := r.drain(ctx, r.db.Collection(c))
		total += n
		allHeld = allHeld && held
		if err != nil {
			errs = append(errs, fmt.Errorf("outbox: relay on %s: %w", c, err))
		}
	}
	if r.leases.prune(ctx) {
		r.forget(ctx, r.now())
	}
	r.countDead(ctx, false)
	r.countPending(ctx, colls)
	return total, allHeld, errors.Join(errs...)
}

// collections returns what the relay serves.
func (r *Relay) collections(ctx context.Context) ([]string, error) {
	if len(r.cfg.collections) > 0 {
		return r.cfg.collections, nil
	}
	var names []string
	cur, err := r.db.Collection(Sources).Find(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("outbox: reading %s: %w", Sources, err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("outbox: reading %s: %w", Sources, err)
	}
	for _, d := range docs {
		names = append(names, d.ID)
	}
	return names, nil
}

// index makes sure coll has the index on due that finds pending documents:
// sparse, so that it holds only documents with work (MongoDB; FerretDB
// accepts and ignores sparse). Leases get one on until, which pruning
// reads.
func (r *Relay) index(ctx context.Context, coll *mongo.Collection) error {
	if _, ok := r.indexed.Load(coll.Name()); ok {
		return nil
	}
	_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: path(partDue), Value: 1}},
		Options: options.Index().SetName("outbox_due").SetSparse(true),
	})
	if err == nil {
		_, err = r.db.Collection(Leases).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "until", Value: 1}}})
	}
	if err != nil {
		return fmt.Errorf("creating the relay's indexes: %w", err)
	}
	r.indexed.Store(coll.Name(), struct{}{})
	return nil
}

// countDead counts DeadLetters at most every ten seconds, or now when
// force, and logs when it grew.
func (r *Relay) countDead(ctx context.Context, force bool) {
	now := r.now().UnixNano()
	if last := r.lastCount.Load(); !force && now-last < int64(10*time.Second) {
		return
	}
	r.lastCount.Store(now)
	n, err := r.db.Collection(DeadLetters).EstimatedDocumentCount(ctx)
	if err != nil {
		return
	}
	if old := r.deadTotal.Swap(n); n > old {
		r.cfg.logger.WarnContext(ctx, "outbox: dead letters wait for someone to look at them", "collection", DeadLetters, "count", n, "new", n-old)
	}
}
