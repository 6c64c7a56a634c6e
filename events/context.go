package events

import "context"

type disabledKey struct{}

// WithoutEvents returns a context under which repositories publish no
// lifecycle events (Spring's setEntityLifecycleEventsEnabled(false)), so
// that a bulk export pays nothing for them. mgm's model hooks still run.
// Listeners such as AutoKeys and Validation do not run either; policies
// (see Policy) do, with Event.Quiet set, since switching events off must
// not switch off tenant isolation or encryption.
func WithoutEvents(ctx context.Context) context.Context {
	return context.WithValue(ctx, disabledKey{}, true)
}

// Enabled reports whether events are enabled for ctx.
func Enabled(ctx context.Context) bool { return ctx.Value(disabledKey{}) == nil }
