// Package sequence hands out unique, increasing numbers from counters kept
// in MongoDB, in blocks, so that a number costs no round trip.
//
// Each sequence has a counter document {_id: name, seq: last} in the
// counters collection. A process reserves a block of numbers with one write
// and hands them out in-process with one atomic add each; when a tenth of a
// block is left it fetches the next block in the background, so callers do
// not wait at block boundaries. The block size adapts to the rate of use,
// between the configured batch and the maximum.
//
// Guarantees: numbers are unique across goroutines, processes and crashes;
// increasing within a process; not in strict order across processes unless
// the batch is 1. A process that dies loses at most the numbers it had
// reserved and not handed out, which is at most one block; one that calls
// Allocator.Close gives them back if nobody reserved after it.
//
// Counter writes never join the caller's session or transaction, and use
// write concern majority by default, so an aborted transaction or a
// failover cannot hand out a number twice. On servers whose findAndModify
// is not atomic (FerretDB 1.x) blocks are settled by unique claim
// documents instead; see Strategy.
//
// A sequence may be served by one strategy and then the other (a database
// moved from FerretDB to MongoDB), or by both at once (a strategy forced on
// some clients): each strategy takes the sequence over from the other
// before it hands out a number, at a few round trips per switch. Processes
// of the release that keyed claims by first number stop with an error at
// a fence this release writes after their claims.
package sequence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mgmevents/mgmevents/internal/serverinfo"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/readpref"
	"go.mongodb.org/mongo-driver/mongo/writeconcern"
)

// Errors returned, wrapped, by the allocator.
var (
	// ErrInvalidArgument is a bad name, option or argument.
	ErrInvalidArgument = errors.New("sequence: invalid argument")
	// ErrConflict is a sequence configured twice with other options.
	ErrConflict = errors.New("sequence: conflicting configuration")
	// ErrOverflow is a number that does not fit where it must go.
	ErrOverflow = errors.New("sequence: overflow")
	// ErrBelowData is a SetNext below the collection's maximum, refused
	// because it would hand out numbers that are already used.
	ErrBelowData = errors.New("sequence: refused below the data's maximum")
	// ErrUnsupported is an operation the strategy in use cannot do.
	ErrUnsupported = errors.New("sequence: unsupported")
	// ErrClosed is a number asked of an allocator after Close.
	ErrClosed = errors.New("sequence: allocator closed")
)

// Allocator hands out numbers for any number of named sequences stored in
// one counters collection. It is safe for concurrent use.
type Allocator struct {
	cfg      config
	db       *mongo.Database
	counters *mongo.Collection
	claims   *mongo.Collection
	floors   *mongo.Collection
	seqs     sync.Map // name -> *Sequence
	mu       sync.Mutex
	store    atomic.Pointer[storeBox]
	closed   atomic.Bool
	closeMu  sync.Mutex     // serializes Close
	closeErr error          // what the first Close returned
	bg       sync.WaitGroup // background writes, waited for by Close
	bgMu     sync.Mutex     // guards bgDone and bg.Add against bg.Wait
	bgDone   bool           // Close is waiting: start no more
}

type storeBox struct{ s store }

// New returns an allocator over db. It does no I/O; the strategy is
// detected at the first reservation.
func New(db *mongo.Database, opts ...Option) (*Allocator, error) {
	if db == nil {
		return nil, fmt.Errorf("sequence: New: nil database: %w", ErrInvalidArgument)
	}
	c := config{collection: "counters", wc: writeconcern.Majority(), batch: 100, maxFactor: 16, timeout: 30 * time.Second, keep: 100}
	if err := c.apply(forNew, opts); err != nil {
		return nil, fmt.Errorf("sequence: New: %w", err)
	}
	switch {
	case c.collection == "" || strings.ContainsAny(c.collection, "$\x00"):
		return nil, fmt.Errorf("sequence: WithCollection(%q): not a collection name: %w", c.collection, ErrInvalidArgument)
	case c.batch < 1:
		return nil, fmt.Errorf("sequence: WithBatch(%d): want ≥ 1: %w", c.batch, ErrInvalidArgument)
	case c.maxFactor < 1:
		return nil, fmt.Errorf("sequence: WithMaxGrowth(%d): want ≥ 1: %w", c.maxFactor, ErrInvalidArgument)
	case c.timeout <= 0:
		return nil, fmt.Errorf("sequence: WithTimeout(%v): want > 0: %w", c.timeout, ErrInvalidArgument)
	case c.keep < 1:
		return nil, fmt.Errorf("sequence: WithClaimRetention(%d): want ≥ 1: %w", c.keep, ErrInvalidArgument)
	case c.strategy > Claim:
		return nil, fmt.Errorf("sequence: WithStrategy(%v): unknown strategy: %w", c.strategy, ErrInvalidArgument)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	copts := options.Collection().SetReadPreference(readpref.Primary())
	if c.wc != nil {
		copts.SetWriteConcern(c.wc)
	}
	a := &Allocator{cfg: c, db: db}
	a.counters = db.Collection(c.collection, copts)
	a.claims = db.Collection(c.collection+".claims", copts)
	a.floors = db.Collection(c.collection+".floors", copts)
	return a, nil
}

// Collection returns the counters collection.
func (a *Allocator) Collection() *mongo.Collection { return a.counters }

// Sequence returns the sequence called name, creating its in-process state
// on first use. Asking again with other options is an ErrConflict; asking
// with none returns it as configured.
func (a *Allocator) Sequence(name string, opts ...Option) (*Sequence, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var c config
	if err := c.apply(forSequence, opts); err != nil {
		return nil, fmt.Errorf("sequence %q: %w", name, err)
	}
	switch {
	case c.startSet && c.start < 1:
		return nil, fmt.Errorf("sequence %q: WithStart(%d): want ≥ 1, since 0 means unset: %w", name, c.start, ErrInvalidArgument)
	case c.batchSet && c.batch < 1:
		return nil, fmt.Errorf("sequence %q: WithBatch(%d): want ≥ 1: %w", name, c.batch, ErrInvalidArgument)
	}
	v, ok := a.seqs.Load(name)
	if !ok {
		n := c
		if n.start == 0 {
			n.start = 1
		}
		if n.batch == 0 {
			n.batch = a.cfg.batch
		}
		v, _ = a.seqs.LoadOrStore(name, newSequence(a, name, n))
	}
	s := v.(*Sequence)
	if (c.start != 0 && c.start != s.start) || (c.batch != 0 && c.batch != s.base) {
		return nil, fmt.Errorf("sequence %q: asked for start %d batch %d, but it has start %d batch %d: %w",
			name, c.start, c.batch, s.start, s.base, ErrConflict)
	}
	return s, nil
}

// Next returns the next number of the sequence called name, configured as
// by Sequence(name).
func (a *Allocator) Next(ctx context.Context, name string) (int64, error) {
	s, err := a.Sequence(name)
	if err != nil {
		return 0, err
	}
	return s.Next(ctx)
}

func checkName(name string) error {
	if name == "" || len(name) > 512 || strings.ContainsAny(name, "#\x00") {
		return fmt.Errorf("sequence: name %q: want 1 to 512 bytes without '#' or NUL: %w", name, ErrInvalidArgument)
	}
	return nil
}

// Strategy returns the strategy in use, detecting it if needed.
func (a *Allocator) Strategy(ctx context.Context) (Strategy, error) {
	s, err := a.getStore(ctx)
	if err != nil {
		return Detect, err
	}
	return s.kind(), nil
}

func (a *Allocator) getStore(ctx context.Context) (store, error) {
	if b := a.store.Load(); b != nil {
		return b.s, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.store.Load(); b != nil {
		return b.s, nil
	}
	kind := a.cfg.strategy
	if kind == Detect {
		atomic, err := serverinfo.AtomicWrites(ctx, a.db)
		if err != nil {
			return nil, fmt.Errorf("sequence: %w", err)
		}
		kind = Claim
		if atomic {
			kind = Atomic
		}
	}
	var s store
	if kind == Claim {
		s = &claimStore{a: a}
	} else {
		s = &atomicStore{a: a}
	}
	a.store.Store(&storeBox{s})
	return s, nil
}

// background runs f in a goroutine with a detached context; Close waits
// for it. After Close has begun waiting, f is dropped.
func (a *Allocator) background(f func(ctx context.Context)) {
	a.bgMu.Lock()
	defer a.bgMu.Unlock()
	if a.bgDone {
		return // a hint or a prune is never needed: the next one catches up
	}
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		ctx, cancel := a.detach()
		defer cancel()
		f(ctx)
	}()
}

// detach returns a context without the caller's values, so that no session
// or transaction is carried into counter writes, and with the allocator's
// timeout.
func (a *Allocator) detach() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), a.cfg.timeout)
}
