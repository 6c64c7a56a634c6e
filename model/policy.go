package model

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// PolicyField is a field with a `policy` tag: the field a policy listener
// gives meaning to. The tag names the policy, then its options, separated
// by commas:
//
//	policy:"NAME"
//	policy:"NAME,OPTION,OPTION=VALUE"
//
// Model parses the tag without knowing any policy: it checks the syntax
// (a name of letters, digits, '-', '_' or '.'; options that are not empty
// and not given twice; one policy key per field) and records the field,
// and each policy checks its own options and field types when a
// repository of the model is created (events.Preparer). A repository
// refuses a model whose policy names no policy on its bus enforces (see
// events.TagEnforcer), so a misspelt name fails closed. The built-in
// policies' tags are policy:"tenant", policy:"softdelete,at",
// policy:"softdelete,by", policy:"encrypt" and policy:"encrypt,eq".
type PolicyField struct {
	Field
	// Policy is the policy's name, the tag's first element.
	Policy string
	// Options are the tag's other elements, in its order.
	Options []string
	// Tag is the tag as written, policy:"...", for errors.
	Tag string
}

// Has reports whether the field's tag gives option opt.
func (f *PolicyField) Has(opt string) bool { return slices.Contains(f.Options, opt) }

// Err returns an error, wrapping ErrInvalidTag, that names model type t,
// the field, its tag and reason: what a policy returns for a field it
// cannot govern.
func (f *PolicyField) Err(t reflect.Type, reason string) error {
	return &TagError{Type: t, Field: f.Name, Tag: f.Tag, Reason: reason}
}

// Policy returns the fields whose tag names policy name, in declaration
// order; nil when there are none.
func (s *Schema) Policy(name string) []PolicyField {
	var out []PolicyField
	for _, f := range s.Policies {
		if f.Policy == name {
			out = append(out, f)
		}
	}
	return out
}

// PolicyOf returns the policy field stored under key, or nil.
func (s *Schema) PolicyOf(key string) *PolicyField {
	for i := range s.Policies {
		if s.Policies[i].BSON == key {
			return &s.Policies[i]
		}
	}
	return nil
}

// PolicyTags returns the names of the policies the model needs: those its
// `policy` tags name, in declaration order, then what NeedsPolicies
// returns (NeedsPolicy), each once. Without the policy the fields would be
// ignored, and the data left unprotected, so repositories refuse such a
// model on a bus where no policy enforces them.
func (s *Schema) PolicyTags() []string {
	var tags []string
	for _, f := range s.Policies {
		if !slices.Contains(tags, f.Policy) {
			tags = append(tags, f.Policy)
		}
	}
	for _, t := range needed(s.Type, s.Struct) {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags
}

// policyTag returns sf's `policy` tag and whether it has one, refusing a
// field whose tag gives the key twice: reflect.StructTag.Lookup would take
// the first and drop the second silently.
func (s *Schema) policyTag(sf reflect.StructField) (string, bool, error) {
	tag, ok := sf.Tag.Lookup("policy")
	if ok && tagKeys(sf.Tag, "policy") > 1 {
		return "", false, s.tagErr(sf.Name, string(sf.Tag), "the policy key is given twice; a field belongs to one policy, whose options follow its name: policy:\"NAME,OPTION\"")
	}
	return tag, ok, nil
}

// parsePolicy reads a `policy` tag of field f.
func parsePolicy(s *Schema, f Field, tag string) (PolicyField, error) {
	p := PolicyField{Field: f, Tag: `policy:"` + tag + `"`}
	fail := func(format string, args ...any) (PolicyField, error) {
		return PolicyField{}, s.tagErr(f.Name, p.Tag, fmt.Sprintf(format, args...))
	}
	parts := strings.Split(tag, ",")
	p.Policy = parts[0]
	switch {
	case p.Policy == "":
		return fail(`no policy name; write policy:"NAME" or policy:"NAME,OPTION"`)
	case strings.IndexFunc(p.Policy, func(r rune) bool { return !nameRune(r) }) >= 0:
		return fail("policy name %q: use letters, digits, '-', '_' and '.'", p.Policy)
	}
	for _, opt := range parts[1:] {
		switch {
		case opt == "" || strings.TrimSpace(opt) != opt:
			return fail("an empty option, or one with spaces around it")
		case slices.Contains(p.Options, opt):
			return fail("option %q given twice", opt)
		}
		p.Options = append(p.Options, opt)
	}
	return p, nil
}

// tagKeys counts the times tag gives key, reading it as
// reflect.StructTag.Lookup does.
func tagKeys(tag reflect.StructTag, key string) int {
	n := 0
	for _, p := range tagPairs(tag) {
		if p.key == key {
			n++
		}
	}
	return n
}

// tagPair is one key:"value" pair of a struct tag; quoted is the value
// as written, quotes included.
type tagPair struct{ key, quoted string }

// tagPairs returns the pairs of tag in its order, reading it as
// reflect.StructTag.Lookup does: the pairs after a malformed one are
// unreadable to Lookup, so they are not returned either.
func tagPairs(tag reflect.StructTag) []tagPair {
	var out []tagPair
	for tag != "" {
		i := 0
		for i < len(tag) && tag[i] == ' ' {
			i++
		}
		tag = tag[i:]
		i = 0
		for i < len(tag) && tag[i] > ' ' && tag[i] != ':' && tag[i] != '"' && tag[i] != 0x7f {
			i++
		}
		if i == 0 || i+1 >= len(tag) || tag[i] != ':' || tag[i+1] != '"' {
			return out
		}
		name := string(tag[:i])
		tag = tag[i+1:]
		i = 1
		for i < len(tag) && tag[i] != '"' {
			if tag[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(tag) {
			return out
		}
		out = append(out, tagPair{key: name, quoted: string(tag[:i+1])})
		tag = tag[i+1:]
	}
	return out
}

func nameRune(r rune) bool {
	return r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// keepStored refuses a policy field shadowed by a shallower field of the
// same BSON name, which the driver stores instead: the policy would never
// see the field its tag names.
func (s *Schema) keepStored() error {
	for _, p := range s.Policies {
		if !s.has(p.Field) {
			return s.tagErr(p.Name, p.Tag, shadowed(p.BSON))
		}
	}
	return nil
}

// shadowErr is keepStored's error for f (sf its struct field), a policy
// field that a field walked before it shadows.
func (s *Schema) shadowErr(f Field, sf reflect.StructField) error {
	tag, _ := sf.Tag.Lookup("policy")
	return s.tagErr(f.Name, `policy:"`+tag+`"`, shadowed(f.BSON))
}

// shadowed is the reason a shadowed policy field of key is refused.
func shadowed(key string) string {
	return "a shallower field of the same BSON name " + key + " shadows the field, and is stored instead, so its policy tag would govern nothing: tag the field that is stored"
}

// holdsTags reports whether struct st, or a struct it inlines, has a
// field with a policy, auto, audit or index tag.
func holdsTags(st reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[st] {
		return false
	}
	seen[st] = true
	for i := 0; i < st.NumField(); i++ {
		sf := st.Field(i)
		if _, ok := sf.Tag.Lookup("policy"); ok || hasMetaTag(sf) {
			return true
		}
		t := sf.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct && bsonTag(sf).inline && holdsTags(t, seen) {
			return true
		}
	}
	return false
}

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
