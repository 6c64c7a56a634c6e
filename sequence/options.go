package sequence

import (
	"fmt"
	"log/slog"
	"time"

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

// Option configures an Allocator.
type Option func(*config)

type config struct {
	collection string
	wc         *writeconcern.WriteConcern
	strategy   Strategy
	batch      int64
	maxFactor  int64
	timeout    time.Duration
	logger     *slog.Logger
	keep       int64
}

// WithCollection sets the counters collection; the default is "counters".
func WithCollection(name string) Option { return func(c *config) { c.collection = name } }

// WithWriteConcern sets the counter writes' write concern; the default is
// majority. A w:1 counter write can be rolled back by a failover and its
// numbers handed out again.
func WithWriteConcern(wc *writeconcern.WriteConcern) Option { return func(c *config) { c.wc = wc } }

// WithStrategy forces a strategy instead of detecting it. Allocators with
// different strategies may share a sequence: each takes it over from the
// other before handing out a number (on FerretDB, Atomic is safe only for
// a client with a single connection, with or without this).
func WithStrategy(s Strategy) Option { return func(c *config) { c.strategy = s } }

// WithBatch sets the default block size of sequences that set none; the
// default is 100.
func WithBatch(n int64) Option { return func(c *config) { c.batch = n } }

// WithMaxGrowth sets how far a block may grow when numbers are used fast:
// up to factor × the sequence's batch. The default is 16; 1 turns
// adaptation off. A crashed process loses at most one block, so this also
// bounds that gap.
func WithMaxGrowth(factor int64) Option { return func(c *config) { c.maxFactor = factor } }

// WithTimeout bounds each counter round trip, which runs detached from the
// caller's context; the default is 30s.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithClaimRetention sets how many claims of each sequence the Claim
// strategy keeps: when version k·n is settled, the claims up to version
// (k-1)·n are deleted, so a sequence has between n and about 2n claim
// documents. The default is 100. A smaller n keeps "<counters>.claims"
// smaller; a writer that sat idle while more than n versions were settled
// then has its next claim dropped and retried at the head. It is never
// unsafe.
func WithClaimRetention(n int64) Option { return func(c *config) { c.keep = n } }

// WithLogger sets the logger for background failures; the default is
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// SeqOption configures one sequence.
type SeqOption func(*seqConfig)

type seqConfig struct {
	start, batch int64
	err          error
}

// Start sets the sequence's first number, at least 1; the default is 1.
func Start(n int64) SeqOption {
	return func(c *seqConfig) {
		if n < 1 {
			c.err = fmt.Errorf("Start(%d): want ≥ 1, since 0 means unset: %w", n, ErrInvalidArgument)
		}
		c.start = n
	}
}

// Batch sets the sequence's block size; the default is the allocator's.
// Batch(1) reserves one number per round trip and caches none, which keeps
// numbers in strict order across processes.
func Batch(n int64) SeqOption {
	return func(c *seqConfig) {
		if n < 1 {
			c.err = fmt.Errorf("Batch(%d): want ≥ 1: %w", n, ErrInvalidArgument)
		}
		c.batch = n
	}
}
