// Package lifecycle adapts a listener with one method per event, like
// Spring's AbstractMongoEventListener, to an events.Listener:
//
//	type audit struct{ lifecycle.Base }
//
//	func (audit) OnBeforeDelete(ctx context.Context, e *events.Event) error { ... }
//
//	bus.Register(lifecycle.Adapt(audit{}))
package lifecycle

import (
	"context"

	"github.com/mgmevents/mgmevents/events"
)

// Listener has one method per event, like Spring's
// AbstractMongoEventListener. Embed Base to implement only the methods you
// need (and to keep compiling when an event is added), and register it with
// Adapt.
type Listener interface {
	OnBeforeConvert(ctx context.Context, e *events.Event) error
	OnBeforeSave(ctx context.Context, e *events.Event) error
	OnAfterSave(ctx context.Context, e *events.Event) error
	OnAfterLoad(ctx context.Context, e *events.Event) error
	OnAfterConvert(ctx context.Context, e *events.Event) error
	OnBeforeDelete(ctx context.Context, e *events.Event) error
	OnAfterDelete(ctx context.Context, e *events.Event) error
	OnBeforeQuery(ctx context.Context, e *events.Event) error
	OnBeforeUpdate(ctx context.Context, e *events.Event) error
	OnAfterUpdate(ctx context.Context, e *events.Event) error
}

// Base implements every Listener method as a no-op. Embed it in a listener
// struct and override the methods you need.
type Base struct{}

// OnBeforeConvert does nothing.
func (Base) OnBeforeConvert(context.Context, *events.Event) error { return nil }

// OnBeforeSave does nothing.
func (Base) OnBeforeSave(context.Context, *events.Event) error { return nil }

// OnAfterSave does nothing.
func (Base) OnAfterSave(context.Context, *events.Event) error { return nil }

// OnAfterLoad does nothing.
func (Base) OnAfterLoad(context.Context, *events.Event) error { return nil }

// OnAfterConvert does nothing.
func (Base) OnAfterConvert(context.Context, *events.Event) error { return nil }

// OnBeforeDelete does nothing.
func (Base) OnBeforeDelete(context.Context, *events.Event) error { return nil }

// OnAfterDelete does nothing.
func (Base) OnAfterDelete(context.Context, *events.Event) error { return nil }

// OnBeforeQuery does nothing.
func (Base) OnBeforeQuery(context.Context, *events.Event) error { return nil }

// OnBeforeUpdate does nothing.
func (Base) OnBeforeUpdate(context.Context, *events.Event) error { return nil }

// OnAfterUpdate does nothing.
func (Base) OnAfterUpdate(context.Context, *events.Event) error { return nil }

// Adapt returns an events.Listener that calls the method of l named after
// each event.
func Adapt(l Listener) events.Listener { return adapter{l} }

type adapter struct{ l Listener }

func (a adapter) HandleEvent(ctx context.Context, e *events.Event) error {
	switch e.Type {
	case events.BeforeConvert:
		return a.l.OnBeforeConvert(ctx, e)
	case events.BeforeSave:
		return a.l.OnBeforeSave(ctx, e)
	case events.AfterSave:
		return a.l.OnAfterSave(ctx, e)
	case events.AfterLoad:
		return a.l.OnAfterLoad(ctx, e)
	case events.AfterConvert:
		return a.l.OnAfterConvert(ctx, e)
	case events.BeforeDelete:
		return a.l.OnBeforeDelete(ctx, e)
	case events.AfterDelete:
		return a.l.OnAfterDelete(ctx, e)
	case events.BeforeQuery:
		return a.l.OnBeforeQuery(ctx, e)
	case events.BeforeUpdate:
		return a.l.OnBeforeUpdate(ctx, e)
	case events.AfterUpdate:
		return a.l.OnAfterUpdate(ctx, e)
	}
	return nil
}
