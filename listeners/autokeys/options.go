package autokeys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
	tenants   TenantScope
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

// TenantScope tells Keys which tenant numbers an
// `auto:"inc,scope=tenant"` field: the tenant that a model naming tenant
// named ("" for none) is written for under ctx, or an error refusing the
// write. *tenancy.Tenancy implements it with the policy's own reading of
// the context.
type TenantScope interface {
	TenantOf(ctx context.Context, named string) (string, error)
}

// WithTenantScope gives Keys the tenancy policy, or any TenantScope, for
// models with `auto:"inc,scope=tenant"` fields; without it such a model is
// refused when its repository is created.
func WithTenantScope(t TenantScope) Option { return func(s *settings) { s.tenants = t } }
