package events

// Essential is implemented by listeners whose work is part of the data
// written rather than a reaction to it, such as AutoKeys filling keys and
// Auditing filling audit fields: switching events off (repo.WithoutEvents,
// WithoutEvents(ctx)) must not store a document without them. They run
// when events are switched off, with Event.Quiet set, in their usual place
// (Order) among the other listeners. Unlike a policy, an essential
// listener runs before the policies on Before* events, and can be
// unregistered.
type Essential interface {
	Listener
	// Essential marks the listener as essential; it is never called.
	Essential()
}
