package repo

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/mgmevents/mgmevents/model"
)

// Policies key on a model's tags, and a collection may be served by
// several models (a read model that leaves fields out, say). So that no
// model reaches a collection's documents around a policy another model
// declares for them, the repositories of one collection, in this process,
// must agree on its policy fields: see the package doc.

// policyTags are the tags that only a policy gives meaning to, as
// model.Schema.PolicyTags names them.
var policyTags = [...]string{"tenant", "softdelete", "encrypt"}

// collKey names a collection: its database's name and its own.
type collKey struct{ db, coll string }

// collUser is a model that a repository serves a collection with, with the
// policy tags its New let go unenforced.
type collUser struct {
	model      reflect.Type
	tags       string                  // the model's policy tags, sorted, comma-separated
	fields     [len(policyTags)]string // per policy tag, the fields it governs; "" for none
	unenforced string                  // the tags given to Unenforced, sorted, comma-separated
}

// collections holds the models each collection is served with.
var collections = struct {
	sync.Mutex
	users map[collKey][]collUser
}{users: map[collKey][]collUser{}}

// policyFields describes, per policy tag, the fields of s it governs, so
// that two models agree on a tag when their descriptions are equal.
func policyFields(s *model.Schema) [len(policyTags)]string {
	var f [len(policyTags)]string
	if s.Tenant != nil {
		f[0] = s.Tenant.BSON
	}
	if at := s.AuditOf(model.DeletedAt); at != nil {
		f[1] = "at " + at.BSON
		if by := s.AuditOf(model.DeletedBy); by != nil {
			f[1] += ", by " + by.BSON
		}
	}
	var enc []string
	for _, e := range s.Encrypted {
		if e.Eq {
			enc = append(enc, e.BSON+` (eq)`)
		} else {
			enc = append(enc, e.BSON)
		}
	}
	slices.Sort(enc)
	f[2] = strings.Join(enc, ", ")
	return f
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
		if o == u {
			return nil
		}
	}
	for _, o := range users {
		for i, tag := range policyTags {
			if o.fields[i] == u.fields[i] || slices.Contains(unenforced, tag) || slices.Contains(strings.Split(o.unenforced, ","), tag) {
				continue
			}
			return fmt.Errorf("collection %q of database %q is also served by %v, whose %q fields are %s, while %v's are %s; "+
				"every repository of a collection must declare its policy fields alike, or one of the two pass repo.Unenforced(%q) knowingly: %w",
				coll, db, o.model, tag, described(o.fields[i]), s.Type, described(u.fields[i]), tag, ErrUnenforced)
		}
	}
	collections.users[key] = append(users, u)
	return nil
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
