package events

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Operation is one call of a repository method, as interceptors see it.
// The repository fills in the counts as the operation goes; it does not
// touch the Operation once the operation has returned, so an interceptor
// may keep it.
type Operation struct {
	// Method is the repository method: "Insert", "Save", "FindOne",
	// "Count", "Aggregate", ...
	Method string
	// Op is the operation of the method's events. Save sets it to OpInsert
	// or OpReplace once it knows which; until then it is 0.
	Op Op
	// Database and Collection are where the operation runs.
	Database, Collection string
	// ModelType is the repository's model type, such as *main.User.
	ModelType reflect.Type
	// Inserted, Matched, Modified, Upserted, Deleted and Returned count
	// what the operation did, as far as it got: the documents written by
	// an insert (by an InsertMany that failed part way, those before the
	// failure), matched, modified and upserted by a replace or an update,
	// deleted (or marked, by a soft delete), and returned by a read
	// (Distinct: the values; Iter: none, since the cursor reads later).
	Inserted, Matched, Modified, Upserted, Deleted, Returned int64
}

// Interceptor wraps every repository operation, as net/http middleware
// wraps a handler: Intercept runs the operation by calling next, once,
// and sees it begin and end, whatever the outcome: success, failure, a
// veto by a Before* listener (a *ListenerError), nothing found, and the
// operations that publish no After* event, such as Count and Distinct.
// The operation runs on the context passed to next, so what the
// interceptor puts into it reaches the listeners, the policies, mgm's
// hooks and the driver, which all run inside next. An interceptor is code
// the application registers, and is trusted as a listener is: what it
// puts in the context (a tenant, say) counts.
//
// Register adds a listener that implements Interceptor to the
// interceptors too, in the same order: the first one runs outermost.
// ForModel and ForType restrict it as they do the listener; an interceptor
// that handles no events returns none from EventTypes, as a function
// adapted by InterceptorFunc does. A listener that
// intercepts only when configured to, such as Logging with a slow
// threshold, also has a method Intercepting() bool, which registration
// asks once: false leaves the operations unwrapped, at no cost.
//
// next runs the operation at most once: a second call, by any interceptor
// of the chain, returns an error wrapping ErrNextAgain and runs nothing.
// An interceptor may call next on another goroutine: when the outermost
// interceptor returns while the operation runs, Intercept waits for it;
// a next called after the outermost interceptor returned runs nothing and
// returns an error, and the operation fails for not having run.
//
// An interceptor may fail an operation, before or after next, by
// returning an error, which the repository returns as is. It cannot hide
// one: when the operation failed, or next was never called, a nil error
// is replaced by the operation's error, or by an error saying so. A panic
// of the interceptor is returned as an error wrapping a *PanicError.
type Interceptor interface {
	Intercept(ctx context.Context, o *Operation, next func(context.Context) error) error
}

// ErrNextAgain is returned, wrapped, by an interceptor's next called after
// the operation has run once (see Interceptor): the operation is not run
// again.
var ErrNextAgain = errors.New("events: next called again: the operation runs once")

// ListenerTracer is implemented by interceptors that trace the listeners
// of the operations they wrap, such as OpenTelemetry's (package
// listeners/tracing). While one is registered for an event's model type,
// the bus calls TraceListener before each listener handles the event: the
// listener runs on the context it returns, so that its own database calls
// nest under it, and end, when not nil, is called with the listener's
// error. Without one, the bus reads no clock and calls nothing more.
type ListenerTracer interface {
	TraceListener(ctx context.Context, e *Event, l Listener) (_ context.Context, end func(error))
}

// Intercepts reports whether an operation on model type mt runs inside
// interceptors. A repository asks before each operation and builds the
// Operation only then, so that an operation without interceptors costs
// what it did without them.
func (b *Bus) Intercepts(mt reflect.Type) bool {
	if b == nil {
		return false
	}
	p := b.regs.Load()
	if p == nil {
		return false
	}
	for _, r := range p.interceptors {
		if r.model == nil || r.model == mt {
			return true
		}
	}
	return false
}

// Intercept runs next, the operation o, inside the interceptors registered
// for o.ModelType, and returns its error as they leave it (see
// Interceptor). Without interceptors, or without o, it calls next(ctx).
func (b *Bus) Intercept(ctx context.Context, o *Operation, next func(context.Context) error) error {
	var chain []*registration
	if p := b.load(); p != nil && o != nil {
		chain = interceptorsFor(p.interceptors, o.ModelType)
	}
	if len(chain) == 0 {
		return next(ctx)
	}
	c := &chainCall{o: o, chain: chain, next: next}
	err := c.call(ctx, 0)
	state, opErr := c.finish()
	switch {
	case err != nil:
		return err
	case state == closed:
		return fmt.Errorf("events: interceptor %T returned without running %s of %v in collection %q, and without an error",
			c.chain[c.reached.Load()-1].l, o.Method, o.ModelType, o.Collection)
	}
	return opErr // an interceptor cannot hide the operation's failure
}

// interceptorsFor returns those of all registered for model type mt: all
// itself, without allocating, when each is.
func interceptorsFor(all []*registration, mt reflect.Type) []*registration {
	for i, r := range all {
		if r.model != nil && r.model != mt {
			chain := slices.Clip(all[:i])
			for _, r := range all[i+1:] {
				if r.model == nil || r.model == mt {
					chain = append(chain, r)
				}
			}
			return chain
		}
	}
	return all
}

func (b *Bus) load() *lists {
	if b == nil {
		return nil
	}
	return b.regs.Load()
}

// The states of a chainCall's operation.
const (
	idle    = iota // next not called yet
	running        // the operation itself is running: a panic is its own
	done           // the operation has returned
	closed         // the chain returned without running it: it never runs
)

// chainCall is one run of an operation through its interceptors. An
// interceptor may call next on another goroutine: mu guards state and
// err, and Intercept waits (wg) for an operation such a next started.
type chainCall struct {
	o       *Operation
	chain   []*registration
	next    func(context.Context) error
	reached atomic.Int32 // interceptors entered
	mu      sync.Mutex
	state   int
	err     error // the operation's
	wg      sync.WaitGroup
}

func (c *chainCall) call(ctx context.Context, i int) error {
	if i > 0 {
		if ctx == nil {
			return fmt.Errorf("events: interceptor %T passed a nil context to next, for %s of %v", c.chain[i-1].l, c.o.Method, c.o.ModelType)
		}
	}
	if i == len(c.chain) {
		return c.run(ctx, c.chain[i-1].l)
	}
	c.reached.Store(int32(i + 1))
	return c.intercept(ctx, i)
}

// run runs the operation, called by interceptor l's next, unless it has
// run or the chain has returned.
func (c *chainCall) run(ctx context.Context, l Listener) error {
	c.mu.Lock()
	state := c.state
	if state == idle {
		c.state = running
		c.wg.Add(1)
	}
	c.mu.Unlock()
	switch state {
	case closed:
		return fmt.Errorf("events: interceptor %T called next for %s of %v in collection %q after the interceptors returned: it does not run",
			l, c.o.Method, c.o.ModelType, c.o.Collection)
	case running, done:
		return fmt.Errorf("events: interceptor %T called next again for %s of %v in collection %q, which ran once: %w",
			l, c.o.Method, c.o.ModelType, c.o.Collection, ErrNextAgain)
	}
	err := c.next(ctx) // a panic leaves the state running (see intercept)
	c.mu.Lock()
	c.err, c.state = err, done
	c.mu.Unlock()
	c.wg.Done()
	return err
}

// finish ends the chain once its interceptors have returned: an operation
// not started never runs, and one running, on a goroutine an interceptor
// left behind, is waited for. It returns the final state and the
// operation's error.
func (c *chainCall) finish() (int, error) {
	c.mu.Lock()
	if c.state == idle {
		c.state = closed
	}
	state := c.state
	c.mu.Unlock()
	if state == running {
		c.wg.Wait()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.err
}

// isRunning reports whether the operation is running.
func (c *chainCall) isRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == running
}

// intercept runs interceptor i, turning its panic, but not one of the
// operation inside it, into an error.
func (c *chainCall) intercept(ctx context.Context, i int) (err error) {
	r := c.chain[i]
	defer func() {
		if v := recover(); v != nil {
			if c.isRunning() {
				panic(v)
			}
			err = fmt.Errorf("events: interceptor %T of %s: %w", r.l, c.o.Method, newPanicError(v))
		}
	}()
	return r.interceptor.Intercept(ctx, c.o, func(ctx context.Context) error { return c.call(ctx, i+1) })
}

// traced calls l as call does, after the TraceListener of each tracer
// registered for e's model type, and ends what they began with its error.
func traced(ctx context.Context, tracers []*registration, l Listener, e *Event) (err error) {
	var buf [2]func(error) // without allocating, for up to two tracers
	ends := buf[:0]
	defer func() {
		for i := len(ends) - 1; i >= 0; i-- {
			if perr := endTrace(ends[i], err); err == nil {
				err = perr
			}
		}
	}()
	for _, t := range tracers {
		if t.model != nil && t.model != e.ModelType {
			continue
		}
		var end func(error)
		if ctx, end, err = startTrace(ctx, t.tracer, e, l); err != nil {
			return err
		}
		ends = append(ends, end)
	}
	return call(ctx, l, e)
}

func startTrace(ctx context.Context, t ListenerTracer, e *Event, l Listener) (_ context.Context, end func(error), err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("events: listener tracer %T: %w", t, newPanicError(v))
		}
	}()
	c, end := t.TraceListener(ctx, e, l)
	if c == nil {
		return ctx, end, nil
	}
	return c, end, nil
}

func endTrace(end func(error), err error) (perr error) {
	if end == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			perr = fmt.Errorf("events: listener tracer's end: %w", newPanicError(v))
		}
	}()
	end(err)
	return nil
}
