package listeners

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mgmevents/mgmevents/sequence"
)

// Option configures the listeners of this package. Each option says which
// listeners apply it; the others ignore it, so one list of options can
// configure them all.
type Option func(*settings)

type settings struct {
	now       func() time.Time
	logger    *slog.Logger
	alloc     *sequence.Allocator
	seqOpts   []sequence.Option
	noIndexes bool
	tenants   TenantScope
	auditor   Auditor
	level     slog.Leveler
	documents bool
	slow      time.Duration
	err       error
}

func apply(opts []Option) (*settings, error) {
	s := &settings{now: time.Now, logger: slog.Default(), level: slog.LevelDebug}
	for _, o := range opts {
		o(s)
	}
	return s, s.err
}

// WithClock sets the clock that dates order numbers (AutoKeys) and audit
// fields (Auditing); the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *settings) {
		if now != nil {
			s.now = now
		}
	}
}

// WithLogger sets the logger AutoKeys reports index problems to; the
// default is slog.Default(). Logging takes its logger as NewLogging's
// argument.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) {
		if l != nil {
			s.logger = l
		}
	}
}

// WithAllocator makes AutoKeys take numbers from a instead of a new
// allocator over its database.
func WithAllocator(a *sequence.Allocator) Option {
	return func(s *settings) {
		if a == nil {
			s.err = errors.Join(s.err, fmt.Errorf("WithAllocator(nil): %w", sequence.ErrInvalidArgument))
		}
		s.alloc = a
	}
}

// WithSequenceOptions configures the allocator NewAutoKeys creates.
func WithSequenceOptions(opts ...sequence.Option) Option {
	return func(s *settings) { s.seqOpts = append(s.seqOpts, opts...) }
}

// WithoutIndexes stops AutoKeys from creating unique indexes on inc fields.
func WithoutIndexes() Option { return func(s *settings) { s.noIndexes = true } }

// TenantScope tells AutoKeys which tenant numbers an
// `auto:"inc,scope=tenant"` field: the tenant that a model naming tenant
// named ("" for none) is written for under ctx, or an error refusing the
// write. *tenancy.Tenancy implements it with the policy's own reading of
// the context.
type TenantScope interface {
	TenantOf(ctx context.Context, named string) (string, error)
}

// WithTenantScope gives AutoKeys the tenancy policy, or any TenantScope,
// for models with `auto:"inc,scope=tenant"` fields; without it such a
// model is refused when its repository is created.
func WithTenantScope(t TenantScope) Option { return func(s *settings) { s.tenants = t } }

// WithAuditor sets the function that tells Auditing who is acting.
func WithAuditor(a Auditor) Option { return func(s *settings) { s.auditor = a } }

// WithLevel sets the level of Logging's records; the default is
// slog.LevelDebug.
func WithLevel(l slog.Leveler) Option {
	return func(s *settings) {
		if l != nil {
			s.level = l
		}
	}
}

// WithSlow makes Logging log every repository operation that takes
// longer than d at Warn, whatever WithLevel says: its method, collection,
// model, duration and what failed (see Logging.Intercept). d ≤ 0, the
// default, logs none, and Logging then wraps no operation.
func WithSlow(d time.Duration) Option { return func(s *settings) { s.slow = d } }

// WithDocuments makes Logging add the document (as extended JSON), the
// filter, the update and the pipeline to each record that has them. They
// may hold personal data: opt in knowingly.
func WithDocuments() Option { return func(s *settings) { s.documents = true } }
