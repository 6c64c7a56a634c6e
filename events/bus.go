package events

import (
	"cmp"
	"context"

	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Bus dispatches events to registered listeners. Its zero value is not
// usable; create one with NewBus. Publishing and registering are safe at the
// same time from any number of goroutines: registering swaps in new sorted
// listener lists, and publishing reads the current ones without a lock.
//
// Policies (see Policy) form the layer closest to the database: on a
// Before* event they run after every other listener, whatever its Order,
// so that what they add to a filter or a document is what is sent; on an
// After* event they run first, so that the others see what they restored.
// They also run when events are switched off (Event.Quiet), as do the
// essential listeners (see Essential), in their usual places.
type Bus struct {
	mu   sync.Mutex // serialises writers of regs
	next uint64
	regs atomic.Pointer[lists]
}

// lists are the registrations, each sorted by order, then registration.
type lists struct {
	plain    []*registration
	policies []*registration
	// essentials are the plain registrations that run when events are
	// switched off too (see Essential).
	essentials []*registration
	// interceptors and tracers are the registrations whose listener is
	// an Interceptor, or a ListenerTracer, too.
	interceptors []*registration
	tracers      []*registration
}

type registration struct {
	l      Listener
	order  int
	seq    uint64
	mask   uint16       // bit t set: handles Type t
	model  reflect.Type // nil: every model
	policy bool
	// restricted: On left the listener fewer event types than it declares.
	restricted bool
	checker    Checker // a policy's Check, or nil
	// essential: runs when events are switched off (see Essential).
	essential bool

	interceptor Interceptor    // or nil
	tracer      ListenerTracer // or nil
}

const allTypes = uint16(1<<(numTypes+1)-1) &^ 1

const afterTypes = allTypes &^ (1<<BeforeConvert | 1<<BeforeSave | 1<<BeforeDelete | 1<<BeforeQuery | 1<<BeforeUpdate)

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{} }

// Option configures one registration.
type Option func(*registration)

// Order sets the listener's place: lower runs first, and listeners with the
// same order run in registration order. The default is 0.
func Order(n int) Option { return func(r *registration) { r.order = n } }

// On restricts the listener to the given event types. A policy restricted
// to fewer types than it handles (its EventTypes, or all of them) checks
// only those, so it counts as enforcing no tag (see TagEnforcer and
// Registration.Restricted): a repository of a model with its tags is
// refused.
func On(types ...Type) Option {
	return func(r *registration) { r.mask = maskOf(types) }
}

// ForModel restricts the listener to events of model type T (the type the
// repository was created with, such as *User), as Spring filters a listener
// by its type parameter.
func ForModel[T any]() Option { return ForType(reflect.TypeFor[T]()) }

// ForType is ForModel for a reflect.Type known only at run time.
func ForType(t reflect.Type) Option { return func(r *registration) { r.model = t } }

// AsPolicy registers the listener as a policy, as if it implemented Policy.
func AsPolicy() Option { return func(r *registration) { r.policy = true } }

func typesOf(mask uint16) []Type {
	var ts []Type
	for t := BeforeConvert; t <= numTypes; t++ {
		if mask&(1<<t) != 0 {
			ts = append(ts, t)
		}
	}
	return ts
}

func maskOf(types []Type) uint16 {
	var m uint16
	for _, t := range types {
		if t >= BeforeConvert && t <= numTypes {
			m |= 1 << t
		}
	}
	return m
}

// Register adds l to the bus and returns a function that removes it again;
// that function reports whether it removed l. A policy (see Policy) is never
// removed: repositories created while it was registered rely on it for as
// long as they live, so its unregister function does nothing and reports
// false. A nil l is ignored. A Deferred listener is registered for
// After* types only, never as a policy.
func (b *Bus) Register(l Listener, opts ...Option) (unregister func() bool) {
	if l == nil {
		return func() bool { return false }
	}
	r := &registration{l: l, mask: allTypes}
	if t, ok := l.(EventTyper); ok {
		r.mask = maskOf(t.EventTypes())
	}
	if _, ok := l.(Policy); ok {
		r.policy = true
	}
	_, r.essential = l.(Essential)
	if t, ok := l.(modelTyped); ok {
		r.model = t.modelType()
	}
	declared := r.mask
	for _, o := range opts {
		o(r)
	}
	r.restricted = r.mask&declared != declared
	if d, ok := l.(Deferred); ok {
		r.mask = maskOf(d.Accept(typesOf(r.mask), r.policy)) & afterTypes
		r.policy = false
	}
	if c, ok := l.(Checker); ok && r.policy {
		r.checker = c
	}
	r.interceptor, _ = l.(Interceptor)
	if i, ok := l.(interface{ Intercepting() bool }); ok && !i.Intercepting() {
		r.interceptor = nil
	}
	r.tracer, _ = l.(ListenerTracer)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	r.seq = b.next
	var ls lists
	if old := b.regs.Load(); old != nil {
		ls = *old
	}
	for _, list := range ls.of(r) {
		*list = append(slices.Clone(*list), r)
		slices.SortStableFunc(*list, func(x, y *registration) int {
			if x.order != y.order {
				return cmp.Compare(x.order, y.order)
			}
			return cmp.Compare(x.seq, y.seq)
		})
	}
	b.regs.Store(&ls)
	return func() bool { return b.remove(r) }
}

// of returns the lists r belongs in.
func (ls *lists) of(r *registration) []*[]*registration {
	out := []*[]*registration{&ls.plain}
	if r.policy {
		out[0] = &ls.policies
	}
	if r.essential && !r.policy {
		out = append(out, &ls.essentials)
	}
	if r.interceptor != nil {
		out = append(out, &ls.interceptors)
	}
	if r.tracer != nil {
		out = append(out, &ls.tracers)
	}
	return out
}

func (b *Bus) remove(r *registration) bool {
	if r.policy {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.regs.Load()
	if old == nil {
		return false
	}
	ls := *old
	if !slices.Contains(*ls.of(r)[0], r) {
		return false
	}
	for _, list := range ls.of(r) {
		i := slices.Index(*list, r)
		*list = slices.Delete(slices.Clone(*list), i, i+1)
	}
	b.regs.Store(&ls)
	return true
}

// Len returns the number of registered listeners, policies included.
func (b *Bus) Len() int {
	if b == nil {
		return 0
	}
	if p := b.regs.Load(); p != nil {
		return len(p.plain) + len(p.policies)
	}
	return 0
}

// Handles reports whether publishing an event of type t for model type mt
// would reach any listener. Publishers use it, as slog's handlers use
// Enabled, to skip building what no listener would read, such as a
// document's encoding.
func (b *Bus) Handles(t Type, mt reflect.Type) bool {
	if b == nil {
		return false
	}
	p := b.regs.Load()
	if p == nil {
		return false
	}
	bit := uint16(1) << t
	for _, list := range [2][]*registration{p.plain, p.policies} {
		for _, r := range list {
			if r.mask&bit != 0 && (r.model == nil || r.model == mt) {
				return true
			}
		}
	}
	return false
}

// Registration describes one listener on a bus, as Listeners reports it.
type Registration struct {
	// Listener is the listener as registered.
	Listener Listener
	// Policy reports whether it runs as a policy (see Policy).
	Policy bool
	// Order is its place (see Order).
	Order int
	// Restricted reports that On left it fewer event types than it
	// handles (its EventTypes, or all of them). A restricted policy
	// enforces no tag: it would confine some operations and not others.
	Restricted bool
}

// Listeners returns the listeners that handle events of model type mt,
// plain listeners first, each group in the order they run on a Before*
// event. A repository asks it once, when it is created, for the Preparer
// and TagEnforcer listeners of its model.
func (b *Bus) Listeners(mt reflect.Type) []Registration {
	if b == nil {
		return nil
	}
	p := b.regs.Load()
	if p == nil {
		return nil
	}
	var out []Registration
	for _, list := range [2][]*registration{p.plain, p.policies} {
		for _, r := range list {
			if r.model == nil || r.model == mt {
				out = append(out, Registration{Listener: r.l, Policy: r.policy, Order: r.order, Restricted: r.restricted})
			}
		}
	}
	return out
}

// Publish calls, in order, every listener registered for e.Type and
// e.ModelType: on a Before* event the other listeners and then the
// policies, on an After* event the policies first; when e.Quiet is set, the
// essential listeners (see Essential) and the policies only, in the same
// order. It stops at the first listener that fails or panics and
// returns a *ListenerError that wraps the cause. For a Before* event that
// error aborts the operation; for an After* event the write has already
// happened. Publishing an event that no listener matches allocates
// nothing.
// A nil Bus has no listeners. Publishing BeforeConvert forgets what
// listeners added to an earlier write of e (see Event.Additions).
func (b *Bus) Publish(ctx context.Context, e *Event) error {
	if e.Type == BeforeConvert {
		e.adds = Additions{}
	}
	if b == nil {
		return nil
	}
	p := b.regs.Load()
	if p == nil {
		return nil
	}
	first, then := p.plain, p.policies
	if !e.Type.Before() {
		first, then = then, first
	}
	if e.Quiet {
		first, then = p.essentials, p.policies
		if !e.Type.Before() {
			first, then = then, first
		}
	}
	if err := publish(ctx, first, e, p.tracers); err != nil {
		return err
	}
	if err := publish(ctx, then, e, p.tracers); err != nil {
		return err
	}
	if !e.Type.Before() {
		return nil
	}
	return check(ctx, p.policies, e)
}

// check runs the Check of every policy that handles e, once all listeners
// have run.
func check(ctx context.Context, policies []*registration, e *Event) error {
	bit := uint16(1) << e.Type
	for _, r := range policies {
		if r.checker == nil || r.mask&bit == 0 || (r.model != nil && r.model != e.ModelType) {
			continue
		}
		if err := callCheck(ctx, r.checker, e); err != nil {
			return newListenerError(e, r.l, err)
		}
	}
	return nil
}

// publish calls the listeners of list that handle e; with tracers
// registered, through them (see ListenerTracer).
func publish(ctx context.Context, list []*registration, e *Event, tracers []*registration) error {
	bit := uint16(1) << e.Type
	for _, r := range list {
		if r.mask&bit == 0 || (r.model != nil && r.model != e.ModelType) {
			continue
		}
		var err error
		if len(tracers) == 0 {
			err = call(ctx, r.l, e)
		} else {
			err = traced(ctx, tracers, r.l, e)
		}
		if err != nil {
			return newListenerError(e, r.l, err)
		}
	}
	return nil
}

func callCheck(ctx context.Context, c Checker, e *Event) (err error) {
	defer func() { err = ended(e, recover(), err) }()
	return c.Check(ctx, e)
}

func call(ctx context.Context, l Listener, e *Event) (err error) {
	defer func() { err = ended(e, recover(), err) }()
	return l.HandleEvent(ctx, e)
}

// ended returns the error of a call on e that returned err or panicked
// with v: the panic, err, or else the first mistake the call made in
// adding to the write (see Event.AddExtra), which it forgets.
func ended(e *Event, v any, err error) error {
	if v != nil {
		err = newPanicError(v)
	}
	if err == nil {
		err = e.misuse
	}
	e.misuse = nil
	return err
}
