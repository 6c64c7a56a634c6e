package autokeys

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/mongo"
)

// Models of one collection share its documents, and so its keys: two
// models that number one field from two sequences, or with two scopes,
// store the same key twice. Prepare sees every model type a repository is
// created for on the bus, and keeps what numbers each key field of each
// collection, to refuse a model that disagrees.

// ErrConflict is wrapped by the error of a Prepare (and so of repo.New)
// for a model whose key field another model of the same collection
// numbers otherwise.
var ErrConflict = errors.New("autokeys: two models of one collection number a field differently")

// numbering is what numbers one key field, and which model said so first.
type numbering struct {
	model reflect.Type
	field string // the Go name in model
	tag   string
	kind  model.Kind
	seq   string
	scope string
	// format is the order-number template, or the zero Format.
	format model.Format
}

// numberingOf returns what numbers f of the model p plans.
func numberingOf(p *plan, f *fieldPlan) numbering {
	n := numbering{model: p.schema.Type, field: f.Name, tag: f.Tag, kind: f.Kind}
	if f.Kind != model.Inc {
		return n
	}
	n.seq = f.Seq
	n.scope = scopeNames(f)
	if f.Format != nil {
		n.format = *f.Format
	}
	return n
}

// differs says how n numbers its field otherwise than o, or "" when they
// number it alike.
func (n numbering) differs(o numbering) string {
	switch {
	case n.kind != o.kind:
		return fmt.Sprintf("kind %s against %s", n.kind, o.kind)
	case n.seq != o.seq:
		return fmt.Sprintf("sequence %q against %q", n.seq, o.seq)
	case n.scope != o.scope:
		return fmt.Sprintf("scope %q against %q", n.scope, o.scope)
	case n.format != o.format:
		return "another format"
	}
	return ""
}

// nsKey names a collection by its database and name.
type nsKey struct{ db, name string }

// numberings holds, per collection, what numbers each key field (by BSON
// name).
type numberings struct {
	mu sync.Mutex
	m  map[nsKey]map[string]numbering
}

// claim records what numbers the key fields of p in coll, or refuses p
// when another model of coll numbers one of them otherwise. It records
// nothing on an error.
func (ns *numberings) claim(p *plan, coll *mongo.Collection) error {
	key := nsKey{coll.Database().Name(), coll.Name()}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	have := ns.m[key]
	for _, f := range p.fields {
		n := numberingOf(p, f)
		o, ok := have[f.BSON]
		if !ok || o.model == n.model {
			continue
		}
		if d := n.differs(o); d != "" {
			return fmt.Errorf("autokeys: collection %s.%s: %v field %s `auto:\"%s\"` and %v field %s `auto:\"%s\"` both number key %q, with %s: their documents would share keys; declare the field alike in both models (the same seq=, scope= and format=), or store them in separate collections: %w",
				key.db, key.name, n.model, n.field, n.tag, o.model, o.field, o.tag, f.BSON, d, ErrConflict)
		}
	}
	if ns.m == nil {
		ns.m = map[nsKey]map[string]numbering{}
	}
	if have == nil {
		have = map[string]numbering{}
		ns.m[key] = have
	}
	for _, f := range p.fields {
		if _, ok := have[f.BSON]; !ok {
			have[f.BSON] = numberingOf(p, f)
		}
	}
	return nil
}
