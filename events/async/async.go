// Package async runs After* listeners off the operation's path: New wraps
// a listener in a queue and a goroutine of its own, and Hold keeps the
// events of a transaction until it commits. It uses only package events'
// public contract: an async Listener is an events.Deferred, which the bus
// never registers for a Before* event or as a policy.
package async

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mgmevents/mgmevents/events"
)

// Listener hands After* events to a listener on a goroutine of its own,
// so that the listener's work does not slow the operation down. Create
// one with New; close it with Close.
//
// The listener gets a copy of each event (see events.Event.Clone), and
// may keep it. Each Listener delivers its events one at a time, in the
// order its HandleEvent took them: events one goroutine publishes arrive
// in the order it published them, and so do events whose publishes are
// ordered by synchronisation. The listener's context carries the
// publisher's values (a tenant, a trace) but not its cancellation; it is
// cancelled when Close gives up.
//
// An error or a panic of the listener is recovered and reported to the
// error handler (WithErrorHandler), since the operation that published the
// event has returned.
//
// A Listener is an events.Deferred: registered with Bus.Register, it
// handles the After* types of the listener's EventTypes (all of them when
// it has none), and the bus leaves out any Before* type that On asks for,
// which Accept reports to the error handler. It is never a policy:
// AsPolicy is refused the same way, and New of a listener that is an
// events.Policy is refused altogether, since a policy enforces its rule
// during the operation. Called directly with a Before* event, HandleEvent
// returns an error wrapping ErrSyncOnly. The listener's other interfaces
// (Preparer, WriteErrorHandler, TagEnforcer) are not passed on.
//
// Inside repo.Transaction, the events wait for the commit (see Hold).
//
// Delivery is best effort: events still queued when the process ends, or
// when Close gives up, are lost, and so is an event dropped on overflow.
// Events that must not be lost belong in the outbox (package outbox),
// written with the change itself.
type Listener struct {
	l        events.Listener
	refusal  error // why l cannot run async, or nil
	size     int
	overflow Overflow
	onError  func(ctx context.Context, err error)

	queue   chan *item
	mu      sync.Mutex // guards closed and senders.Add
	closed  bool
	senders sync.WaitGroup // HandleEvent calls between the closed check and the send
	stop    chan struct{}  // closed when Close begins: blocked senders give up
	drain   chan struct{}  // closed once no sender is left: the worker empties the queue and returns
	done    chan struct{}  // closed when the worker returns
	life    context.Context
	abandon context.CancelFunc // cancels life: the worker stops delivering
	once    sync.Once          // closes drain
	dropped atomic.Uint64
}

// item is one queued event: the copy, and the context it is delivered
// with.
type item struct {
	e   *events.Event
	ctx detached
}

// detached has the publisher's values and the Listener's life.
type detached struct {
	context.Context                 // the life: Done, Err, Deadline
	values          context.Context // the publisher's, without its cancellation
}

func (c *detached) Value(key any) any { return c.values.Value(key) }

// New returns a Listener that delivers the After* events it is given to
// l, on a goroutine it starts now. Close it when done; until then the
// goroutine runs.
func New(l events.Listener, opts ...Option) *Listener {
	a := &Listener{l: l, size: DefaultQueue, onError: logError,
		stop: make(chan struct{}), drain: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(a)
	}
	switch l.(type) {
	case nil:
		a.refusal = fmt.Errorf("async: New of a nil listener: %w", ErrSyncOnly)
	case events.Policy:
		a.refusal = fmt.Errorf("async: New of %T, a policy, which must run synchronously to enforce its rule: %w", l, ErrSyncOnly)
	}
	a.queue = make(chan *item, a.size)
	a.life, a.abandon = context.WithCancel(context.Background())
	go a.run()
	return a
}

func logError(ctx context.Context, err error) {
	slog.Default().ErrorContext(ctx, "async: listener", "err", err)
}

// EventTypes returns the After* types of the listener's EventTypes, or
// every After* type when it does not implement events.EventTyper.
func (a *Listener) EventTypes() []events.Type {
	var ts []events.Type
	if t, ok := a.l.(events.EventTyper); ok {
		ts = t.EventTypes()
	} else {
		for t := events.BeforeConvert; t <= events.AfterUpdate; t++ { // every type
			ts = append(ts, t)
		}
	}
	after, _ := split(ts)
	return after
}

// split returns the After* types of ts, and the names of the others.
func split(ts []events.Type) (after []events.Type, before []string) {
	for _, t := range ts {
		if t.Before() {
			before = append(before, t.String())
		} else {
			after = append(after, t)
		}
	}
	return after, before
}

// Accept returns the After* types of those a registration asks for, and
// reports to the error handler what it refuses: Before* types, running as
// a policy, and every type when New refused the listener. Bus.Register
// calls it (see events.Deferred).
func (a *Listener) Accept(types []events.Type, policy bool) []events.Type {
	ctx := context.Background()
	if a.refusal != nil {
		a.report(ctx, fmt.Errorf("async: registration refused: %w", a.refusal))
		return nil
	}
	after, before := split(types)
	if len(before) > 0 {
		a.report(ctx, fmt.Errorf("async: registration of %T refused %s: %w", a.l, strings.Join(before, ", "), ErrSyncOnly))
	}
	if policy {
		a.report(ctx, fmt.Errorf("async: registration of %T as a policy refused; it is registered as an ordinary listener: %w", a.l, ErrSyncOnly))
	}
	return after
}

// HandleEvent queues a copy of e for the listener and returns. When the
// queue is full it blocks, drops or fails, as WithOverflow says. It
// returns an error wrapping ErrSyncOnly for a Before* event, ErrClosed
// once Close has begun, and the context's error when ctx is done while it
// waits for room. With a context from Hold, it keeps the copy in the Held
// instead, to be queued when the Held is released.
func (a *Listener) HandleEvent(ctx context.Context, e *events.Event) error {
	if a.refusal != nil {
		return a.refusal
	}
	if e.Type.Before() {
		return fmt.Errorf("async: %v refused by an async %T: %w", e.Type, a.l, ErrSyncOnly)
	}
	if h := heldIn(ctx); h != nil && h.hold(a, ctx, e) {
		return nil // queued when the transaction commits: see Hold
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return fmt.Errorf("async: %v event not queued: %w", e.Type, ErrClosed)
	}
	a.senders.Add(1)
	a.mu.Unlock()
	defer a.senders.Done()

	it := &item{e: e.Clone(), ctx: detached{Context: a.life, values: context.WithoutCancel(ctx)}}
	select {
	case a.queue <- it:
		return nil
	default:
	}
	switch a.overflow {
	case OverflowDrop:
		a.dropped.Add(1)
		return nil
	case OverflowFail:
		return fmt.Errorf("async: %v event not queued, %d waiting: %w", e.Type, a.size, ErrQueueFull)
	}
	select {
	case a.queue <- it:
		return nil
	case <-a.stop:
		return fmt.Errorf("async: %v event not queued: %w", e.Type, ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("async: %v event not queued, the queue is full: %w", e.Type, ctx.Err())
	}
}

// Dropped returns the number of events dropped because the queue was full
// (OverflowDrop).
func (a *Listener) Dropped() uint64 { return a.dropped.Load() }

// Queued returns the number of events waiting for the listener.
func (a *Listener) Queued() int { return len(a.queue) }

// Close refuses new events (HandleEvent returns ErrClosed, and publishers
// waiting for room give up), delivers the events already queued, and
// returns once the listener has had the last one. When ctx is done first,
// Close cancels the listener's context, discards what is still queued and
// returns an error that says how many events were left and wraps ctx's
// error; the listener may still be running its current event then.
// Unregister the listener before closing it, or its events fail with
// ErrClosed. Close may be called more than once.
func (a *Listener) Close(ctx context.Context) error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.stop)
	}
	a.mu.Unlock()
	a.senders.Wait() // each leaves at once: it sent, or saw stop
	a.once.Do(func() { close(a.drain) })
	select {
	case <-a.done:
		return nil // delivered, even if ctx is done too
	default:
	}
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		n := len(a.queue)
		a.abandon()
		return fmt.Errorf("async: listener closed with %d events undelivered: %w", n, ctx.Err())
	}
}

// run delivers the queued events one by one until Close has drained the
// queue or given up.
func (a *Listener) run() {
	defer close(a.done)
	defer a.abandon()
	for {
		select {
		case it := <-a.queue:
			a.deliver(it)
		case <-a.drain:
			for {
				select {
				case it := <-a.queue:
					a.deliver(it)
				default:
					return
				}
			}
		}
	}
}

func (a *Listener) deliver(it *item) {
	if a.life.Err() != nil {
		return // Close gave up: discard
	}
	if err := a.call(&it.ctx, it.e); err != nil {
		a.report(&it.ctx, failed(it.e, a.l, err))
	}
}

// call calls the listener, turning its panic into an *events.PanicError.
func (a *Listener) call(ctx context.Context, e *events.Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &events.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return a.l.HandleEvent(ctx, e)
}

// failed is the error of listener l on event e, as the bus would make it.
func failed(e *events.Event, l events.Listener, err error) *events.ListenerError {
	return &events.ListenerError{Type: e.Type, Op: e.Op, Collection: e.Collection, ModelType: e.ModelType, Listener: l, Err: err}
}

// report hands err to the error handler; a panic of the handler is logged,
// so that it cannot stop the delivery of the next events.
func (a *Listener) report(ctx context.Context, err error) {
	defer func() {
		if v := recover(); v != nil {
			logError(ctx, fmt.Errorf("async: the listener's error handler panicked (%v) on: %w", v, err))
		}
	}()
	a.onError(ctx, err)
}
