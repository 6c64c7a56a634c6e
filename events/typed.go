package events

import (
	"context"
	"reflect"
)

// TypedFunc adapts a function that takes the model as T to a Listener that
// sees the events of model type T only, or, when T is an interface, of
// every model type that implements it; so f never gets another model's
// zero T. The model argument is the zero T when an event of T has no model
// (AfterLoad, the events of operations by filter).
func TypedFunc[T any](f func(ctx context.Context, e *Event, model T) error) Listener {
	return &typedFunc[T]{f: f, t: reflect.TypeFor[T]()}
}

type typedFunc[T any] struct {
	f func(ctx context.Context, e *Event, model T) error
	t reflect.Type
}

// HandleEvent calls f for an event of a model of type T.
func (l *typedFunc[T]) HandleEvent(ctx context.Context, e *Event) error {
	mt := e.ModelType
	if mt == nil && e.Model != nil {
		mt = reflect.TypeOf(e.Model)
	}
	if mt == nil || !mt.AssignableTo(l.t) {
		return nil
	}
	m, _ := e.Model.(T)
	return l.f(ctx, e, m)
}

// modelTyped is implemented by listeners that serve one model type, which
// Register then restricts them to, as ForModel does, so that Handles is
// exact for them.
type modelTyped interface {
	modelType() reflect.Type
}

// modelType is T, or nil when T is an interface (any model may implement
// it; HandleEvent filters).
func (l *typedFunc[T]) modelType() reflect.Type {
	if l.t.Kind() == reflect.Interface {
		return nil
	}
	return l.t
}
