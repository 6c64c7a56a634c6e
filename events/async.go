package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrSyncOnly is reported, and returned by AsyncListener.HandleEvent, for
// a Before* event, or for a listener that must stay synchronous: a Before*
// listener can veto the operation and a policy enforces a rule, so neither
// can run after the operation has gone on without it.
var ErrSyncOnly = errors.New("events: an async listener takes After* events only; a Before* event can veto the operation, so its listeners run synchronously")

// ErrQueueFull is returned by AsyncListener.HandleEvent when the queue is
// full and the overflow policy is OverflowFail.
var ErrQueueFull = errors.New("events: async listener's queue is full")

// ErrClosed is returned by AsyncListener.HandleEvent once Close has begun.
var ErrClosed = errors.New("events: async listener is closed")

// DefaultQueue is the queue length of an AsyncListener without WithQueue.
const DefaultQueue = 1024

// Overflow says what AsyncListener.HandleEvent does when the queue is full.
type Overflow uint8

// The overflow policies.
const (
	// OverflowBlock waits for room, so a slow listener slows the
	// publishers down (back-pressure). It is the default. The wait ends
	// with an error when the publisher's context is done or Close begins.
	OverflowBlock Overflow = iota
	// OverflowDrop drops the new event, counts it (AsyncListener.Dropped)
	// and returns nil: the operation goes on as if it was delivered.
	OverflowDrop
	// OverflowFail returns an error wrapping ErrQueueFull, which the bus
	// wraps in a *ListenerError for the operation's caller (the write has
	// been done).
	OverflowFail
)

// AsyncOption configures an AsyncListener.
type AsyncOption func(*AsyncListener)

// WithQueue sets the length of the queue: how many events wait for the
// listener before the overflow policy applies. n below 1 is taken as 1.
// The default is DefaultQueue.
func WithQueue(n int) AsyncOption { return func(a *AsyncListener) { a.size = max(n, 1) } }

// WithOverflow sets what happens to an event that finds the queue full.
// The default is OverflowBlock.
func WithOverflow(o Overflow) AsyncOption { return func(a *AsyncListener) { a.overflow = o } }

// WithErrorHandler sets the function that is told of what cannot be
// returned to a publisher: an error or a recovered panic of the listener
// (a *ListenerError wrapping it, or a *PanicError), and the event types or
// the listener that registration refused (an error wrapping ErrSyncOnly).
// It may be called from any goroutine. The default logs at Error level
// with slog.Default().
func WithErrorHandler(f func(ctx context.Context, err error)) AsyncOption {
	return func(a *AsyncListener) {
		if f != nil {
			a.onError = f
		}
	}
}

// AsyncListener hands After* events to a listener on a goroutine of its
// own, so that the listener's work does not slow the operation down.
// Create one with Async; close it with Close.
//
// The listener gets a copy of each event, and may keep it: the Event
// struct, its Document bytes, its Collation, Batch and the slices of its
// Additions (one level deep) are its own. What the copy's
// other fields point to is shared: Model and the models in Batch are the
// caller's pointers, which it may change once the operation returns
// (Document holds the bytes as written or read); Filter, Pipeline, Update,
// UpsertedID, Sort and Projection are the values the operation used, to be
// read only; Coll and Registry are the repository's, safe for concurrent
// use.
//
// Each AsyncListener delivers its events one at a time, in the order its
// HandleEvent took them: events one goroutine publishes arrive in the
// order it published them, and so do events whose publishes are ordered
// by synchronisation. The listener's context carries the publisher's
// values (a tenant, a trace) but not its cancellation; it is cancelled
// when Close gives up.
//
// An error or a panic of the listener is recovered and reported to the
// error handler (WithErrorHandler), since the operation that published the
// event has returned.
//
// Registration refuses Before* events: registered with Bus.Register, an
// AsyncListener handles the After* types of the listener's EventTypes (all
// of them when it has none), and the bus leaves out any Before* type that
// On asks for, reporting the refusal to the error handler. It is never a
// policy: AsPolicy is refused the same way, and Async of a listener that
// is a Policy is refused altogether, since a policy enforces its rule
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
type AsyncListener struct {
	l        Listener
	refusal  error // why l cannot run async, or nil
	size     int
	overflow Overflow
	onError  func(ctx context.Context, err error)

	queue   chan *asyncItem
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

// asyncItem is one queued event: the copy, and the context it is
// delivered with.
type asyncItem struct {
	e   Event
	ctx asyncContext
}

// asyncContext has the publisher's values and the AsyncListener's life.
type asyncContext struct {
	context.Context                 // the life: Done, Err, Deadline
	values          context.Context // the publisher's, without its cancellation
}

func (c *asyncContext) Value(key any) any { return c.values.Value(key) }

// Async returns an AsyncListener that delivers the After* events it is
// given to l, on a goroutine it starts now. Close it when done; until then
// the goroutine runs.
func Async(l Listener, opts ...AsyncOption) *AsyncListener {
	a := &AsyncListener{l: l, size: DefaultQueue, onError: logAsyncError,
		stop: make(chan struct{}), drain: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(a)
	}
	switch l.(type) {
	case nil:
		a.refusal = fmt.Errorf("events: Async of a nil listener: %w", ErrSyncOnly)
	case Policy:
		a.refusal = fmt.Errorf("events: Async of %T, a policy, which must run synchronously to enforce its rule: %w", l, ErrSyncOnly)
	}
	a.queue = make(chan *asyncItem, a.size)
	a.life, a.abandon = context.WithCancel(context.Background())
	go a.run()
	return a
}

func logAsyncError(ctx context.Context, err error) {
	slog.Default().ErrorContext(ctx, "events: async listener", "err", err)
}

const afterTypes = allTypes &^ (1<<BeforeConvert | 1<<BeforeSave | 1<<BeforeDelete | 1<<BeforeQuery | 1<<BeforeUpdate)

// EventTypes returns the After* types of the listener's EventTypes, or
// every After* type when it does not implement EventTyper.
func (a *AsyncListener) EventTypes() []Type {
	mask := afterTypes
	if t, ok := a.l.(EventTyper); ok {
		mask &= maskOf(t.EventTypes())
	}
	return typesOf(mask)
}

func typesOf(mask uint16) []Type {
	var ts []Type
	for t := BeforeConvert; t <= numTypes; t++ {
		if mask&(1<<t) != 0 {
			ts = append(ts, t)
		}
	}
	return ts
}

// accept keeps in registration r what a can take, and reports what it
// refuses: Before* types, and running as a policy. Bus.Register calls it.
func (a *AsyncListener) accept(r *registration) {
	if a.refusal != nil {
		a.report(context.Background(), fmt.Errorf("events: registration refused: %w", a.refusal))
		r.mask = 0
		return
	}
	if refused := r.mask &^ afterTypes; refused != 0 {
		names := make([]string, 0, 5)
		for _, t := range typesOf(refused) {
			names = append(names, t.String())
		}
		a.report(context.Background(), fmt.Errorf("events: registration of an async %T refused %s: %w", a.l, strings.Join(names, ", "), ErrSyncOnly))
		r.mask &= afterTypes
	}
	if r.policy {
		a.report(context.Background(), fmt.Errorf("events: registration of an async %T as a policy refused; it is registered as an ordinary listener: %w", a.l, ErrSyncOnly))
		r.policy = false
	}
}

// HandleEvent queues a copy of e for the listener and returns; see
// AsyncListener for what is copied. When the queue is full it blocks,
// drops or fails, as WithOverflow says. It returns an error wrapping
// ErrSyncOnly for a Before* event, ErrClosed once Close has begun, and
// the context's error when ctx is done while it waits for room. With a
// context from Hold, it keeps the copy in the Held instead, to be queued
// when the Held is released.
func (a *AsyncListener) HandleEvent(ctx context.Context, e *Event) error {
	if a.refusal != nil {
		return a.refusal
	}
	if e.Type.Before() {
		return fmt.Errorf("events: %v refused by an async %T: %w", e.Type, a.l, ErrSyncOnly)
	}
	if h := heldIn(ctx); h != nil && h.hold(a, ctx, e) {
		return nil // queued when the transaction commits: see Hold
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return fmt.Errorf("events: %v event not queued: %w", e.Type, ErrClosed)
	}
	a.senders.Add(1)
	a.mu.Unlock()
	defer a.senders.Done()

	it := &asyncItem{e: copyEvent(e), ctx: asyncContext{Context: a.life, values: context.WithoutCancel(ctx)}}
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
		return fmt.Errorf("events: %v event not queued, %d waiting: %w", e.Type, a.size, ErrQueueFull)
	}
	select {
	case a.queue <- it:
		return nil
	case <-a.stop:
		return fmt.Errorf("events: %v event not queued: %w", e.Type, ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("events: %v event not queued, the queue is full: %w", e.Type, ctx.Err())
	}
}

// copyEvent returns a copy of e that shares none of the memory
// AsyncListener says is the listener's own.
func copyEvent(e *Event) Event {
	c := *e
	c.Document = slices.Clone(e.Document)
	c.Batch = slices.Clone(e.Batch)
	c.adds = e.adds.clone()
	if e.Collation != nil {
		col := *e.Collation
		c.Collation = &col
	}
	return c
}

// Dropped returns the number of events dropped because the queue was full
// (OverflowDrop).
func (a *AsyncListener) Dropped() uint64 { return a.dropped.Load() }

// Queued returns the number of events waiting for the listener.
func (a *AsyncListener) Queued() int { return len(a.queue) }

// Close refuses new events (HandleEvent returns ErrClosed, and publishers
// waiting for room give up), delivers the events already queued, and
// returns once the listener has had the last one. When ctx is done first,
// Close cancels the listener's context, discards what is still queued and
// returns an error that says how many events were left and wraps ctx's
// error; the listener may still be running its current event then.
// Unregister the listener before closing it, or its events fail with
// ErrClosed. Close may be called more than once.
func (a *AsyncListener) Close(ctx context.Context) error {
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
		return fmt.Errorf("events: async listener closed with %d events undelivered: %w", n, ctx.Err())
	}
}

// run delivers the queued events one by one until Close has drained the
// queue or given up.
func (a *AsyncListener) run() {
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

func (a *AsyncListener) deliver(it *asyncItem) {
	if a.life.Err() != nil {
		return // Close gave up: discard
	}
	if err := call(&it.ctx, a.l, &it.e); err != nil {
		a.report(&it.ctx, newListenerError(&it.e, a.l, err))
	}
}

// report hands err to the error handler; a panic of the handler is logged,
// so that it cannot stop the delivery of the next events.
func (a *AsyncListener) report(ctx context.Context, err error) {
	defer func() {
		if v := recover(); v != nil {
			logAsyncError(ctx, fmt.Errorf("events: the async listener's error handler panicked (%v) on: %w", v, err))
		}
	}()
	a.onError(ctx, err)
}
