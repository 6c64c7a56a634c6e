package sequence

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/writeconcern"
)

// Strategy is how a block is reserved on the server.
type Strategy uint8

const (
	// Detect asks the server: FerretDB (buildInfo has ferretdbVersion) gets
	// Claim, anything else Atomic. It is the default.
	Detect Strategy = iota
	// Atomic reserves a block with one findOneAndUpdate {$inc: {seq: n}},
	// which MongoDB applies atomically.
	Atomic
	// Claim reserves a block by inserting the sequence's next version, a
	// claim document whose unique _id is the sequence name and the version
	// number, in the collection "<counters>.claims". The server's
	// unique-key check picks one winner per version even where
	// findAndModify is not atomic. Old claims are pruned; see
	// WithClaimRetention.
	Claim
)

// String returns the strategy's name.
func (s Strategy) String() string {
	switch s {
	case Detect:
		return "detect"
	case Atomic:
		return "atomic"
	case Claim:
		return "claim"
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// Option configures the allocator (New), one sequence (Allocator.Sequence)
// or a move of its counter (Sequence.SetNext). Each option says which of
// them take it; the others refuse it with ErrInvalidArgument.
type Option func(*config)

// The calls that take options.
const (
	forNew uint8 = 1 << iota
	forSequence
	forSetNext
)

var callNames = map[uint8]string{forNew: "New", forSequence: "Sequence", forSetNext: "SetNext"}

type config struct {
	call  uint8 // the call the options are given to
	wrong error // an option given to a call that does not take it

	// New
	collection string
	wc         *writeconcern.WriteConcern
	strategy   Strategy
	batch      int64 // also Sequence
	maxFactor  int64
	timeout    time.Duration
	logger     *slog.Logger
	keep       int64

	// Sequence
	start              int64
	startSet, batchSet bool

	// SetNext
	dataColl  *mongo.Collection
	dataField string
	force     bool
}

// takes records that the option called name applies to the calls in
// calls, and reports whether the call being configured is one of them.
func (c *config) takes(name string, calls uint8) bool {
	if c.call&calls != 0 {
		return true
	}
	if c.wrong == nil {
		var to []string
		for _, k := range []uint8{forNew, forSequence, forSetNext} {
			if calls&k != 0 {
				to = append(to, callNames[k])
			}
		}
		c.wrong = fmt.Errorf("%s applies to %s, not %s: %w", name, strings.Join(to, " and "), callNames[c.call], ErrInvalidArgument)
	}
	return false
}

// apply applies opts to c for call, and returns the first option the call
// does not take.
func (c *config) apply(call uint8, opts []Option) error {
	c.call = call
	for _, o := range opts {
		o(c)
	}
	return c.wrong
}

// option is the Option called name, which calls take (see config.takes),
// and which does set.
func option(name string, calls uint8, set func(*config)) Option {
	return func(c *config) {
		if c.takes(name, calls) {
			set(c)
		}
	}
}

// WithCollection sets the counters collection; the default is "counters".
// New takes it.
func WithCollection(name string) Option {
	return option("WithCollection", forNew, func(c *config) { c.collection = name })
}

// WithWriteConcern sets the counter writes' write concern; the default is
// majority. A w:1 counter write can be rolled back by a failover and its
// numbers handed out again. New takes it.
func WithWriteConcern(wc *writeconcern.WriteConcern) Option {
	return option("WithWriteConcern", forNew, func(c *config) { c.wc = wc })
}

// WithStrategy forces a strategy instead of detecting it. Allocators with
// different strategies may share a sequence: each takes it over from the
// other before handing out a number (on FerretDB, Atomic is safe only for
// a client with a single connection, with or without this). New takes it.
func WithStrategy(s Strategy) Option {
	return option("WithStrategy", forNew, func(c *config) { c.strategy = s })
}

// WithBatch sets the block size: given to New, of every sequence that sets
// none (the default is 100); given to Sequence, of that sequence.
// WithBatch(1) reserves one number per round trip and caches none, which
// keeps numbers in strict order across processes.
func WithBatch(n int64) Option {
	return option("WithBatch", forNew|forSequence, func(c *config) { c.batch, c.batchSet = n, true })
}

// WithStart sets a sequence's first number, at least 1; the default is 1.
// Sequence takes it.
func WithStart(n int64) Option {
	return option("WithStart", forSequence, func(c *config) { c.start, c.startSet = n, true })
}

// WithMaxGrowth sets how far a block may grow when numbers are used fast:
// up to factor × the sequence's batch. The default is 16; 1 turns
// adaptation off. A crashed process loses at most one block, so this also
// bounds that gap. New takes it.
func WithMaxGrowth(factor int64) Option {
	return option("WithMaxGrowth", forNew, func(c *config) { c.maxFactor = factor })
}

// WithTimeout bounds each counter round trip, which runs detached from the
// caller's context; the default is 30s. New takes it.
func WithTimeout(d time.Duration) Option {
	return option("WithTimeout", forNew, func(c *config) { c.timeout = d })
}

// WithClaimRetention sets how many claims of each sequence the Claim
// strategy keeps: when version k·n is settled, the claims up to version
// (k-1)·n are deleted, so a sequence has between n and about 2n claim
// documents. The default is 100. A smaller n keeps "<counters>.claims"
// smaller; a writer that sat idle while more than n versions were settled
// then has its next claim dropped and retried at the head. It is never
// unsafe. New takes it.
func WithClaimRetention(n int64) Option {
	return option("WithClaimRetention", forNew, func(c *config) { c.keep = n })
}

// WithLogger sets the logger for background failures; the default is
// slog.Default(). New takes it.
func WithLogger(l *slog.Logger) Option {
	return option("WithLogger", forNew, func(c *config) { c.logger = l })
}

// WithDataCheck makes SetNext refuse a value at or below the largest value
// of field in coll, which would hand out numbers that are already used.
// SetNext takes it.
func WithDataCheck(coll *mongo.Collection, field string) Option {
	return option("WithDataCheck", forSetNext, func(c *config) { c.dataColl, c.dataField = coll, field })
}

// WithForce lets SetNext go below the data's maximum, and below the
// counter (Atomic strategy only). Numbers may then be handed out twice.
// SetNext takes it.
func WithForce() Option {
	return option("WithForce", forSetNext, func(c *config) { c.force = true })
}
