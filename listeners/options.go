package listeners

import (
	"log/slog"
	"time"
)

// Each constructor takes options of its own type, so that an option given
// to a listener that would ignore it does not compile.

// AuditingOption configures NewAuditing.
type AuditingOption func(*Auditing)

// LoggingOption configures NewLogging.
type LoggingOption func(*Logging)

// WithClock sets the clock that dates Auditing's fields; the default is
// time.Now.
func WithClock(now func() time.Time) AuditingOption {
	return func(a *Auditing) {
		if now != nil {
			a.now = now
		}
	}
}

// WithAuditor sets the function that tells Auditing who is acting.
func WithAuditor(f Auditor) AuditingOption { return func(a *Auditing) { a.auditor = f } }

// WithLevel sets the level of Logging's records; the default is
// slog.LevelDebug.
func WithLevel(l slog.Leveler) LoggingOption {
	return func(g *Logging) {
		if l != nil {
			g.level = l
		}
	}
}

// WithSlow makes Logging log every repository operation that takes
// longer than d at Warn, whatever WithLevel says: its method, collection,
// model, duration and what failed (see Logging.Intercept). d ≤ 0, the
// default, logs none, and Logging then wraps no operation.
func WithSlow(d time.Duration) LoggingOption { return func(g *Logging) { g.slow = d } }

// WithDocuments makes Logging add the document (as extended JSON), the
// filter, the update and the pipeline to each record that has them. They
// may hold personal data: opt in knowingly.
func WithDocuments() LoggingOption { return func(g *Logging) { g.documents = true } }
