package repo

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/mgmevents/mgmevents/model"
)

// Policies key on a model's `policy` tags, and a collection may be served
// by several models (a read model that leaves fields out, say). So that no
// model reaches a collection's documents around a policy another model
// declares for them, the repositories of one collection, in this process,
// must agree on its policy fields: see the package doc.

// collKey names a collection: its database's name and its own.
type collKey struct{ db, coll string }

// collUser is a model that a repository serves a collection with, with the
// policy tags its New let go unenforced.
type collUser struct {
	model      reflect.Type
	tags       string            // the model's policy tags, sorted, comma-separated
	fields     map[string]string // per policy, the fields it governs
	unenforced string            // the tags given to Unenforced, sorted, comma-separated
}

// same reports whether u and o are one model's claim.
func (u collUser) same(o collUser) bool {
	return u.model == o.model && u.tags == o.tags && u.unenforced == o.unenforced && maps.Equal(u.fields, o.fields)
}

// collections holds the models each collection is served with.
var collections = struct {
	sync.Mutex
	users map[collKey][]collUser
}{users: map[collKey][]collUser{}}

// policyFields describes, per policy name, the fields of s it governs and
// their options, so that two models agree on a policy when their
// descriptions are equal.
func policyFields(s *model.Schema) map[string]string {
	byPolicy := map[string][]string{}
	for _, f := range s.Policies {
		d := f.BSON
		if len(f.Options) > 0 {
			d += " (" + strings.Join(f.Options, ",") + ")"
		}
		byPolicy[f.Policy] = append(byPolicy[f.Policy], d)
	}
	out := make(map[string]string, len(byPolicy))
	for name, fields := range byPolicy {
		slices.Sort(fields)
		out[name] = strings.Join(fields, ", ")
	}
	return out
}

// claimCollection records that s serves collection coll of database db,
// with the tags unenforced let go, after checking that every other model
// that serves it declares the same policy fields, unless either of the two
// lets that tag go unenforced. On a disagreement it records nothing and
// returns an error wrapping ErrUnenforced that names both models and the
// tag.
func claimCollection(db, coll string, s *model.Schema, unenforced []string) error {
	u := collUser{model: s.Type, tags: tagSet(s.PolicyTags()), fields: policyFields(s), unenforced: tagSet(unenforced)}
	key := collKey{db, coll}
	collections.Lock()
	defer collections.Unlock()
	users := collections.users[key]
	for _, o := range users {
		if o.same(u) {
			return nil
		}
	}
	for _, o := range users {
		for _, tag := range policyNames(o.fields, u.fields) {
			if o.fields[tag] == u.fields[tag] || slices.Contains(unenforced, tag) || slices.Contains(strings.Split(o.unenforced, ","), tag) {
				continue
			}
			return fmt.Errorf("collection %q of database %q is also served by %v, whose %q fields are %s, while %v's are %s; "+
				"every repository of a collection must declare its policy fields alike, or one of the two pass repo.Unenforced(%q) knowingly: %w",
				coll, db, o.model, tag, described(o.fields[tag]), s.Type, described(u.fields[tag]), tag, ErrUnenforced)
		}
	}
	collections.users[key] = append(users, u)
	return nil
}

// policyNames returns the policies a or b describes, sorted.
func policyNames(a, b map[string]string) []string {
	names := slices.Collect(maps.Keys(a))
	for name := range b {
		if _, ok := a[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// tagSet returns tags sorted, without repeats, comma-separated.
func tagSet(tags []string) string {
	tags = slices.Clone(tags)
	slices.Sort(tags)
	return strings.Join(slices.Compact(tags), ",")
}

// described quotes a policyFields description, or says there is none.
func described(fields string) string {
	if fields == "" {
		return "none"
	}
	return "[" + fields + "]"
}

// governedBy returns the policy tags of the models that serve collection
// coll of database db in this process, sorted.
func governedBy(db, coll string) []string {
	collections.Lock()
	defer collections.Unlock()
	var tags []string
	for _, u := range collections.users[collKey{db, coll}] {
		if u.tags != "" {
			tags = append(tags, strings.Split(u.tags, ",")...)
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}
