package async

import (
	"context"
	"errors"
)

// ErrSyncOnly is reported, and returned by Listener.HandleEvent, for
// a Before* event, or for a listener that must stay synchronous: a Before*
// listener can veto the operation and a policy enforces a rule, so neither
// can run after the operation has gone on without it.
var ErrSyncOnly = errors.New("async: After* events only; a Before* event can veto the operation, so its listeners run synchronously")

// ErrQueueFull is returned by Listener.HandleEvent when the queue is
// full and the overflow policy is OverflowFail.
var ErrQueueFull = errors.New("async: the listener's queue is full")

// ErrClosed is returned by Listener.HandleEvent once Close has begun.
var ErrClosed = errors.New("async: the listener is closed")

// DefaultQueue is the queue length of a Listener without WithQueue.
const DefaultQueue = 1024

// Overflow says what Listener.HandleEvent does when the queue is full.
type Overflow uint8

// The overflow policies.
const (
	// OverflowBlock waits for room, so a slow listener slows the
	// publishers down (back-pressure). It is the default. The wait ends
	// with an error when the publisher's context is done or Close begins.
	OverflowBlock Overflow = iota
	// OverflowDrop drops the new event, counts it (Listener.Dropped)
	// and returns nil: the operation goes on as if it was delivered.
	OverflowDrop
	// OverflowFail returns an error wrapping ErrQueueFull, which the bus
	// wraps in an *events.ListenerError for the operation's caller (the write has
	// been done).
	OverflowFail
)

// Option configures a Listener.
type Option func(*Listener)

// WithQueue sets the length of the queue: how many events wait for the
// listener before the overflow policy applies. n below 1 is taken as 1.
// The default is DefaultQueue.
func WithQueue(n int) Option { return func(a *Listener) { a.size = max(n, 1) } }

// WithOverflow sets what happens to an event that finds the queue full.
// The default is OverflowBlock.
func WithOverflow(o Overflow) Option { return func(a *Listener) { a.overflow = o } }

// WithErrorHandler sets the function that is told of what cannot be
// returned to a publisher: an error or a recovered panic of the listener
// (an *events.ListenerError wrapping it, or an *events.PanicError), and the event types or
// the listener that registration refused (an error wrapping ErrSyncOnly).
// It may be called from any goroutine. The default logs at Error level
// with slog.Default().
func WithErrorHandler(f func(ctx context.Context, err error)) Option {
	return func(a *Listener) {
		if f != nil {
			a.onError = f
		}
	}
}
