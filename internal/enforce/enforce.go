// Package enforce lets this module's policies prove to a repository that
// they enforce the policy tags only they give meaning to ("tenant",
// "encrypt", "softdelete", "outbox"). events.TagEnforcer is a claim any
// listener can make; Prover's method takes a Token, which only packages of
// this module can name, so no other listener implements it. A type that
// embeds one of the policies gets the method too, but its proof names the
// embedded policy, not the registered listener, and proves nothing.
package enforce

import (
	"reflect"
	"slices"
)

// Token is the parameter of Prover's method. Only this module can name it.
type Token struct{ _ [0]func() }

// Prover is implemented by this module's policies.
type Prover interface {
	// ProveTags returns the policy itself (its receiver, as registered)
	// and the reserved tags it enforces.
	ProveTags(Token) (self any, tags []string)
}

// reserved are the tags only a Prover enforces.
var reserved = []string{"tenant", "encrypt", "softdelete", "outbox"}

// Reserved reports whether tag is one that only a Prover, registered as
// itself, enforces.
func Reserved(tag string) bool { return slices.Contains(reserved, tag) }

// Proves reports whether l, a registered listener, proves that it
// enforces the reserved tag: it is a Prover whose proof names l itself,
// not a policy l embeds, and lists tag.
func Proves(l any, tag string) bool {
	p, ok := l.(Prover)
	if !ok {
		return false
	}
	self, tags := p.ProveTags(Token{})
	t := reflect.TypeOf(self)
	return t != nil && t == reflect.TypeOf(l) && t.Comparable() && self == l && slices.Contains(tags, tag)
}
