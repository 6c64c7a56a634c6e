package model

import (
	"reflect"
	"slices"
)

// NeedsPolicy is implemented by models that need a policy to give them
// meaning without a struct tag saying so, usually through an embedded type:
// outbox.Recorder needs "outbox", the policy that stores the events it
// records. Schema.PolicyTags includes what NeedsPolicies returns, so a
// repository refuses such a model on a bus where no policy enforces it (see
// events.TagEnforcer), as it does for a tag.
type NeedsPolicy interface {
	// NeedsPolicies returns the policy tags the model needs. It is called
	// on a new zero value of the model.
	NeedsPolicies() []string
}

// needed returns what t's zero value says it needs, or nil.
func needed(t, st reflect.Type) []string {
	if t == nil || st == nil || !t.Implements(reflect.TypeFor[NeedsPolicy]()) {
		return nil
	}
	n, ok := reflect.New(st).Interface().(NeedsPolicy)
	if !ok {
		return nil
	}
	return slices.Clone(n.NeedsPolicies())
}
