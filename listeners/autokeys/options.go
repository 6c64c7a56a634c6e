package autokeys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/sequence"
)

// Option configures New.
type Option func(*settings)

type settings struct {
	now       func() time.Time
	logger    *slog.Logger
	alloc     *sequence.Allocator
	seqOpts   []sequence.Option
	noIndexes bool
	sources   []ScopeSource
	err       error
}

func apply(opts []Option) (*settings, error) {
	s := &settings{now: time.Now, logger: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	return s, s.err
}

// WithClock sets the clock that dates order numbers
// (`format=...{date:...}`); the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *settings) {
		if now != nil {
			s.now = now
		}
	}
}

// WithLogger sets the logger Keys reports to (a counter moved past the
// data, fields left without a unique index by WithoutIndexes); the
// default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) {
		if l != nil {
			s.logger = l
		}
	}
}

// WithAllocator makes Keys take numbers from a instead of a new
// allocator over its database.
func WithAllocator(a *sequence.Allocator) Option {
	return func(s *settings) {
		if a == nil {
			s.err = errors.Join(s.err, fmt.Errorf("WithAllocator(nil): %w", sequence.ErrInvalidArgument))
		}
		s.alloc = a
	}
}

// WithSequenceOptions configures the allocator New creates.
func WithSequenceOptions(opts ...sequence.Option) Option {
	return func(s *settings) { s.seqOpts = append(s.seqOpts, opts...) }
}

// WithoutIndexes stops Keys from creating unique indexes on inc and uuid
// fields. Nothing then stops a duplicate key that the data already holds
// or that another writer stores: Prepare logs, at Warn, each field it
// leaves unprotected, when the repository of its model is created.
func WithoutIndexes() Option { return func(s *settings) { s.noIndexes = true } }

// ScopeSource gives Keys the value of a scope field that a policy, not
// the caller, sets: a policy runs after Keys (see events.Policy), so the
// field may still be empty when Keys numbers the model. *tenancy.Tenancy
// is one, for the tenant field (`auto:"inc,scope=tenant"`), with the
// policy's own reading of the context.
type ScopeSource interface {
	// FillsScope reports whether the source gives the value of field f
	// of models of s.
	FillsScope(s *model.Schema, f *model.Field) bool
	// ScopeValue returns, as a value of f's type, the value f has in the
	// document written under ctx when the model (or the upsert) gives it
	// named (the zero value for none), or an error that refuses the write
	// before a number is taken.
	ScopeValue(ctx context.Context, s *model.Schema, f *model.Field, named reflect.Value) (reflect.Value, error)
}

// WithScopeSource gives Keys the policies, or any ScopeSource, that set
// scope fields. A scope field that a `policy` tag names is refused when
// the repository of its model is created unless one of them fills it:
// its policy may set or change it after Keys has numbered the model.
func WithScopeSource(srcs ...ScopeSource) Option {
	return func(s *settings) {
		for _, src := range srcs {
			if src == nil {
				s.err = errors.Join(s.err, fmt.Errorf("WithScopeSource(nil): %w", sequence.ErrInvalidArgument))
				continue
			}
			s.sources = append(s.sources, src)
		}
	}
}
