package events

import (
	"context"
	"reflect"
)

// callerKey is a context key whose values are the caller's (see CallerKey).
type callerKey struct{ key any }

// CallerKey returns a context key, made from key, whose values only the
// application's own call chain sets: use it with context.WithValue and
// ctx.Value as any key. What decides access is stored so: the tenant of
// tenancy.WithTenant and AllTenants, softdelete.WithDeleted and
// HardDelete, WithoutEvents. Interceptors and listener tracers choose the
// context an operation, or a listener, runs on (see Interceptor); a value
// of a caller key in it is the one the repository method was called with,
// plus what the listeners then add on their way to a nested repository
// call, never one an interceptor or a tracer put in. So a plugin's
// interceptor cannot widen an operation, nor, through the context a
// listener passes on, the operations nested in it; and a listener can
// still narrow a nested call (tenancy.WithTenant inside an AllTenants
// job). Without interceptors and tracers, a caller key costs what any key
// does.
//
// key must be comparable, as context.WithValue requires; CallerKey
// returns any other key unchanged. Call it once, into a package variable:
// each call boxes the key anew.
func CallerKey(key any) any {
	if key == nil || !reflect.TypeOf(key).Comparable() {
		return key
	}
	return callerKey{key}
}

// guardKey finds the innermost guarded context.
type guardKey struct{}

// guarded is the context an operation runs on inside interceptors, an
// interceptor inside another, and a listener under a ListenerTracer: it
// holds what the interceptor or tracer passed on, but answers for the
// caller keys with the context it was given.
type guarded struct {
	context.Context                 // as the interceptor or the tracer passed it on
	caller          context.Context // as it was given to the interceptor or the tracer
	// root is the application's context outside every guarded context:
	// the one the outermost intercepted repository method was called with.
	root context.Context
	view callerView // Caller(g), without allocating
}

// guard returns ctx, which an interceptor or a tracer passed on, with the
// caller keys of caller.
func guard(ctx, caller context.Context) context.Context {
	g := &guarded{Context: ctx, caller: caller, root: caller}
	if outer, ok := caller.Value(guardKey{}).(*guarded); ok {
		g.root = outer.root
	}
	g.view = callerView{Context: g, root: g.root}
	return g
}

func (g *guarded) Value(key any) any {
	switch key.(type) {
	case callerKey:
		return g.caller.Value(key)
	case guardKey:
		return g
	}
	return g.Context.Value(key)
}

// callerView is what Caller returns inside a guarded context.
type callerView struct {
	context.Context                 // the context Caller was given: cancellation and caller keys
	root            context.Context // every other value
}

func (v *callerView) Value(key any) any {
	switch key.(type) {
	case callerKey:
		return v.Context.Value(key)
	case guardKey:
		return nil // outside every guarded context
	}
	return v.root.Value(key)
}

// Caller returns the context to read the application's values from, such
// as who is acting or the tenant, inside an operation or a listener that
// interceptors or tracers may have given another context. Its values are
// those of the context the outermost intercepted repository method was
// called with, and for caller keys (see CallerKey) those of ctx, which
// listeners may have narrowed for a nested call; nothing an interceptor or
// a tracer added shows. It ends when ctx does. Policies read what decides
// access from it, and so do the functions that name an actor
// (softdelete.WithActor, listeners.WithAuditor). Outside interceptors and
// tracers it returns ctx.
func Caller(ctx context.Context) context.Context {
	g, ok := ctx.Value(guardKey{}).(*guarded)
	switch {
	case !ok:
		return ctx
	case ctx == context.Context(g):
		return &g.view
	}
	return &callerView{Context: ctx, root: g.root}
}
