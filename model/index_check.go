package model

import (
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

var indexerType = reflect.TypeFor[Indexer]()

// methodIndexes adds the indexes of the model's Indexes method, if any.
func (s *Schema) methodIndexes() (err error) {
	if !s.Type.Implements(indexerType) {
		return nil
	}
	var models []mongo.IndexModel
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("model: type %v: Indexes() panicked on a zero model: %v: %w", s.Type, r, ErrInvalidIndex)
			}
		}()
		models = reflect.New(s.Struct).Interface().(Indexer).Indexes()
	}()
	if err != nil {
		return err
	}
	for i, m := range models {
		ix, reason := fromModel(m)
		if reason != "" {
			return fmt.Errorf("model: type %v: Indexes()[%d]: %s: %w", s.Type, i, reason, ErrInvalidIndex)
		}
		ix.Source = fmt.Sprintf("%v.Indexes()[%d]", s.Type, i)
		s.Indexes = append(s.Indexes, ix)
	}
	return nil
}

// fromModel reads a driver index model; it returns a reason on error.
func fromModel(m mongo.IndexModel) (Index, string) {
	if km, ok := m.Keys.(bson.M); ok && len(km) > 1 {
		return Index{}, "Keys is a bson.M of several keys, whose order is random; use a bson.D"
	}
	if km, ok := m.Keys.(map[string]any); ok && len(km) > 1 {
		return Index{}, "Keys is a map of several keys, whose order is random; use a bson.D"
	}
	raw, err := bson.Marshal(m.Keys)
	if err != nil {
		return Index{}, fmt.Sprintf("Keys %T is not a document: %v", m.Keys, err)
	}
	elems, _ := bson.Raw(raw).Elements()
	if len(elems) == 0 {
		return Index{}, "no keys"
	}
	ix := Index{}
	for _, e := range elems {
		v, ok := keyValue(e.Value())
		if !ok {
			return Index{}, fmt.Sprintf("key %q: want 1, -1 or an index type such as \"text\", not %v", e.Key(), e.Value())
		}
		ix.Keys = append(ix.Keys, bson.E{Key: e.Key(), Value: v})
	}
	ix.Name = IndexName(ix.Keys)
	if o := m.Options; o != nil {
		c := *o
		ix.extra = &c
		if o.Name != nil {
			if *o.Name == "" {
				return Index{}, "an empty Name"
			}
			ix.Name = *o.Name
		}
		ix.Unique = o.Unique != nil && *o.Unique
		ix.Sparse = o.Sparse != nil && *o.Sparse
		if o.ExpireAfterSeconds != nil {
			if *o.ExpireAfterSeconds < 0 || len(ix.Keys) > 1 {
				return Index{}, "a TTL index has a single field and ExpireAfterSeconds ≥ 0"
			}
			secs := *o.ExpireAfterSeconds
			ix.ExpireAfterSeconds = &secs
		}
		if o.PartialFilterExpression != nil {
			pf, err := bson.Marshal(o.PartialFilterExpression)
			if err != nil {
				return Index{}, fmt.Sprintf("PartialFilterExpression %T is not a document: %v", o.PartialFilterExpression, err)
			}
			ix.PartialFilter = pf
		}
	}
	return ix, ""
}

// keyValue returns an index key's value as an int32 direction or a string
// index type.
func keyValue(v bson.RawValue) (any, bool) {
	var f float64
	switch v.Type {
	case bson.TypeString:
		return v.StringValue(), true
	case bson.TypeInt32:
		f = float64(v.Int32())
	case bson.TypeInt64:
		f = float64(v.Int64())
	case bson.TypeDouble:
		f = v.Double()
	}
	if f != 1 && f != -1 {
		return nil, false
	}
	return int32(f), true
}

// checkIndexes refuses two declarations of one index, and AutoKeys'
// unique index on an inc or uuid field, which AutoKeys makes. (A policy
// refuses an index that conflicts with its fields itself.)
func (s *Schema) checkIndexes() error {
	byName := map[string]*Index{}
	for i := range s.Indexes {
		ix := &s.Indexes[i]
		if prev, ok := byName[ix.Name]; ok {
			return s.indexErr(ix, "the name "+ix.Name+" is also declared by "+prev.Source)
		}
		byName[ix.Name] = ix
		for j := range s.Indexes[:i] {
			if prev := &s.Indexes[j]; sameKeys(prev.Keys, ix.Keys) && string(prev.PartialFilter) == string(ix.PartialFilter) {
				return s.indexErr(ix, "the same keys are indexed by "+prev.Source)
			}
		}
		if reason := s.ownedKeys(ix.Keys); reason != "" {
			return s.indexErr(ix, reason)
		}
	}
	return nil
}

// ownedKeys returns why keys may not be declared, or "".
func (s *Schema) ownedKeys(keys bson.D) string {
	for _, a := range s.Auto {
		if (a.Kind != Inc && a.Kind != UUID) || a.BSON == "_id" {
			continue
		}
		var own bson.D // as autokeys makes it: the scope fields, the field
		for _, sc := range a.Scope {
			own = append(own, bson.E{Key: sc.BSON, Value: int32(1)})
		}
		own = append(own, bson.E{Key: a.BSON, Value: int32(1)})
		if sameKeys(keys, own) {
			return "AutoKeys makes the unique index " + KeysString(own) + " on auto:\"" + a.Kind.String() + "\" field " + a.Name + " itself (autokeys.WithoutIndexes turns it off)"
		}
	}
	return ""
}

func (s *Schema) indexErr(ix *Index, reason string) error {
	return fmt.Errorf("model: type %v: index %s: %s: %w", s.Type, ix, reason, ErrInvalidIndex)
}

// sameKeys reports whether a and b index the same keys in the same order
// and directions, numbers compared by value.
func sameKeys(a, b bson.D) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || fmt.Sprint(a[i].Value) != fmt.Sprint(b[i].Value) {
			return false
		}
	}
	return true
}
