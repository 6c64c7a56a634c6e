package outbox

import (
	"context"
	"time"
)

// Clock is the time a relay reads and waits on: its leases, backoffs,
// publish deadlines, polls and counts. The default is the system's; a
// test gives a relay a clock it moves itself, so that it never sleeps
// against a lease.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f, in its own goroutine or the one that moves the
	// clock, once d has passed; stop cancels the call and reports whether
	// it did, as time.Timer's Stop does.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// systemClock is the system's time.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// WithClock sets the clock the outbox dates its writes with (when a
// document is due for a relay); the default is time.Now. Give its relays
// the same time (WithRelayClock).
func WithClock(now func() time.Time) Option { return func(o *Outbox) { o.now = now } }

// WithRelayClock sets the relay's clock; the default is the system's.
func WithRelayClock(c Clock) RelayOption { return func(cfg *relayConfig) { cfg.clock = c } }

// now is the relay's time.
func (r *Relay) now() time.Time { return r.cfg.clock.Now() }

// withDeadline returns ctx ending at t by the relay's clock: with the
// system's clock, a context with that deadline; with another, a context
// that the clock cancels at t, with context.DeadlineExceeded as its cause.
func (r *Relay) withDeadline(ctx context.Context, t time.Time) (context.Context, context.CancelFunc) {
	if _, ok := r.cfg.clock.(systemClock); ok {
		return context.WithDeadline(ctx, t)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := r.cfg.clock.AfterFunc(t.Sub(r.cfg.clock.Now()), func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// sleep waits d by the relay's clock, or until ctx ends; it reports
// whether d passed.
func (r *Relay) sleep(ctx context.Context, d time.Duration) bool {
	wake := make(chan struct{})
	stop := r.cfg.clock.AfterFunc(d, func() { close(wake) })
	select {
	case <-ctx.Done():
		stop()
		return false
	case <-wake:
		return true
	}
}
