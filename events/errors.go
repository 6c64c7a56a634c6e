package events

import (
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
)

// ErrAborted matches, through errors.Is, every *ListenerError of a Before*
// event: the operation was stopped before anything was written.
var ErrAborted = errors.New("events: operation aborted by a listener")

// ErrPanic matches, through errors.Is, a listener panic that the bus
// recovered. errors.As with a *PanicError gives the value and the stack.
var ErrPanic = errors.New("events: listener panicked")

// ListenerError is returned when a listener fails or panics. It names the
// event, the operation, the collection, the model type and the listener,
// and wraps the listener's error, so errors.Is and errors.As see through
// it.
type ListenerError struct {
	Type       Type
	Op         Op
	Collection string
	ModelType  reflect.Type
	// Listener is the listener that failed (for an async listener, the
	// listener it delivers to), as registered: tracing names it.
	Listener Listener
	Err      error
}

func newListenerError(e *Event, l Listener, err error) *ListenerError {
	return &ListenerError{Type: e.Type, Op: e.Op, Collection: e.Collection, ModelType: e.ModelType, Listener: l, Err: err}
}

// Error says which event's listener failed, in which operation, and why:
// "events: BeforeSave listener aborted Insert of *main.User in collection
// "users": cause".
func (e *ListenerError) Error() string {
	var b strings.Builder
	b.WriteString("events: " + e.Type.String() + " listener ")
	if e.Type.Before() {
		b.WriteString("aborted")
	} else {
		b.WriteString("failed after")
	}
	if e.Op != 0 {
		b.WriteString(" " + e.Op.String())
	}
	if e.ModelType != nil {
		b.WriteString(" of " + e.ModelType.String())
	}
	if e.Collection != "" {
		fmt.Fprintf(&b, " in collection %q", e.Collection)
	}
	if !e.Type.Before() {
		b.WriteString(" (the write was done)")
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

// Unwrap returns the listener's error.
func (e *ListenerError) Unwrap() error { return e.Err }

// Is reports whether target is ErrAborted and the event is a Before* event.
func (e *ListenerError) Is(target error) bool { return target == ErrAborted && e.Type.Before() }

// PanicError is a recovered listener panic.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the listener goroutine's stack at the panic
}

func newPanicError(v any) error {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// Error describes the panic.
func (p *PanicError) Error() string { return fmt.Sprintf("listener panicked: %v", p.Value) }

// Is reports whether target is ErrPanic.
func (p *PanicError) Is(target error) bool { return target == ErrPanic }

// Unwrap returns the panic value when it is an error, so that errors.Is
// sees through panic(err).
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// ErrUnguardedQuery is returned, wrapped, by a policy for an operation it
// cannot confine: an aggregate stage that reaches another collection
// ($lookup, $graphLookup, $unionWith, $out, $merge), or a collation under
// which the policy's equality could match other documents.
var ErrUnguardedQuery = errors.New("events: query not confined by a policy")
