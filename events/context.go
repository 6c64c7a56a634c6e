package events

import "context"

type disabled struct{}

// disabledKey is the context key of WithoutEvents.
var disabledKey = disabled{}

// WithoutEvents returns a context under which repositories publish
// lifecycle events only to the listeners that are part of the data
// (Spring's setEntityLifecycleEventsEnabled(false), which leaves entity
// callbacks such as auditing on), so that a bulk export or import pays for
// nothing else. Exactly:
//
//   - Policies (see Policy: tenancy, soft delete, encryption, the outbox)
//     and essential listeners (see Essential: AutoKeys, Auditing) still
//     run, in their usual order, with Event.Quiet set; switching events
//     off must neither bypass a rule nor store a document without its
//     keys or audit fields.
//   - Every other listener is silenced: Logging, Validation, async
//     listeners and your own, unless they are policies or essential.
//   - What the repository does itself still happens: mgm's model hooks,
//     the optimistic-locking version, and the refusal to store a zero key.
func WithoutEvents(ctx context.Context) context.Context {
	return context.WithValue(ctx, disabledKey, true)
}

// Enabled reports whether events are enabled for ctx.
func Enabled(ctx context.Context) bool { return ctx.Value(disabledKey) == nil }
