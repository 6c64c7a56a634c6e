package events

import (
	"context"
	"reflect"

	"go.mongodb.org/mongo-driver/mongo"
)

// Listener handles lifecycle events. It is to the bus what http.Handler is to
// a server. An error returned for a Before* event aborts the operation.
type Listener interface {
	HandleEvent(ctx context.Context, e *Event) error
}

// ListenerFunc adapts an ordinary function to a Listener, as
// http.HandlerFunc does.
type ListenerFunc func(ctx context.Context, e *Event) error

// HandleEvent calls f(ctx, e).
func (f ListenerFunc) HandleEvent(ctx context.Context, e *Event) error { return f(ctx, e) }

// Policy is implemented by listeners that enforce a rule no operation may
// skip, such as tenant isolation, soft delete or encryption; AsPolicy does
// the same for any listener at registration. A policy is the layer of
// listeners closest to the database: on Before* events it runs after all
// other listeners, whatever their Order, so no other listener can undo
// what it adds to a filter, an update or a document; on After* events it
// runs before them, so they see what it restores. It also runs when events
// are switched off (repo.WithoutEvents, WithoutEvents(ctx)), which silence
// the listeners that are neither policies nor essential (see Essential).
// Policies order among themselves by Order.
type Policy interface {
	Listener
	// EnforcesPolicy marks the listener as a policy; it is never called.
	EnforcesPolicy()
}

// TagEnforcer is implemented by policies that enforce a struct tag of the
// models, such as Tenancy for `policy:"tenant"`. A repository refuses to be created
// for a model that uses such a tag when no registered policy enforces it
// (see Bus.Listeners): a model tagged for encryption on a bus without the
// encryption policy would otherwise be stored in plaintext, silently. A
// policy registered with On for fewer event types than it handles
// enforces no tag (Registration.Restricted). A listener that is not a
// policy enforces none.
type TagEnforcer interface {
	// EnforcesTags returns the names of the policies it is, as a model's
	// `policy` tags and NeedsPolicies name them (model.Schema.PolicyTags).
	EnforcesTags() []string
}

// Checker is implemented by policies that verify, once every listener of a
// Before* event has run (other policies included, whatever their Order),
// that what the operation will send still obeys them: that the condition a
// policy added to the filter is still a conjunct of it, say. The bus calls
// Check on each registered policy that handles the event, after all
// listeners; an error aborts the operation, so that a later listener's
// mistake fails closed instead of widening access. Check must not change
// the event.
type Checker interface {
	Check(ctx context.Context, e *Event) error
}

// Deferred is implemented by listeners that handle events after the
// operation has gone on without them, such as package async's: by then
// an error vetoes nothing, and a policy would enforce nothing. Register
// calls Accept once, with the event types the registration asks for (the
// listener's EventTypes, or On's) and whether it asks for a policy, and
// registers the listener for the After* types among those Accept
// returns, never as a policy. Accept may report what it refuses; it must
// not register or publish.
type Deferred interface {
	Listener
	Accept(types []Type, policy bool) []Type
}

// EventTyper is implemented by listeners that handle only some event types.
// The bus asks once, at registration, and then skips the listener for other
// types at no cost. The On option overrides it.
type EventTyper interface {
	EventTypes() []Type
}

// Preparer is implemented by listeners that check or precompute something
// for each model type and collection, such as AutoKeys validating its
// sequences or Encryption making its indexes. A repository calls Prepare on
// each of its model's listeners when it is created, with the collection it
// writes to (in its database, with its registry: the same as Event.Coll),
// so that a mistake is reported then rather than at the first write, and
// what a listener makes goes where the data is. Several repositories of
// one model type over several databases each call it.
type Preparer interface {
	Prepare(modelType reflect.Type, coll *mongo.Collection) error
}

// WriteErrorHandler is implemented by listeners that can repair the cause
// of a failed write, such as AutoKeys moving a counter that is behind the
// data past the collection's maximum. When a handler returns retry, the
// repository runs the operation again from BeforeConvert, with the model's
// auto fields that were zero before the attempt set back to zero.
type WriteErrorHandler interface {
	HandleWriteError(ctx context.Context, e *Event, err error) (retry bool, _ error)
}
