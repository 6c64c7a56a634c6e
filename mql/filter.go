package mql

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// ErrBadDocument is returned, wrapped, for a filter, update or pipeline that
// the helpers of this package cannot read as a document or an array of
// documents.
var ErrBadDocument = errors.New("mql: not a document")

// And returns a filter that matches what filter matches and also every
// condition in cond. filter may have any shape the driver accepts (bson.D,
// bson.M, a map, a struct, bson.Raw); nil or an empty document gives cond
// alone. When filter is a bson.D or a map that names none of cond's keys at
// its top level, cond's conditions are added beside its own (top-level
// conditions are a conjunction, and servers use their indexes on such flat
// filters best); otherwise the result is {$and: [filter, cond]}. Either way
// it is a conjunction, so nothing in filter can widen it: an $or, a
// condition on the same field or any nesting all stay inside cond. filter
// itself is not changed.
//
//	e.Filter = mql.And(e.Filter, bson.E{Key: "tenant", Value: "acme"})
func And(filter any, cond ...bson.E) bson.D {
	c := bson.D(slices.Clone(cond))
	if isEmpty(filter) {
		return c
	}
	var flat bson.D
	switch f := filter.(type) {
	case bson.D:
		flat = f
	case bson.M:
		flat = fromMap(f)
	case map[string]any:
		flat = fromMap(f)
	}
	if flat != nil && !slices.ContainsFunc(flat, func(e bson.E) bool {
		return slices.ContainsFunc(c, func(k bson.E) bool { return k.Key == e.Key })
	}) {
		return append(slices.Clip(slices.Clone(flat)), c...)
	}
	return bson.D{{Key: "$and", Value: bson.A{filter, c}}}
}

// isEmpty reports whether filter matches everything because it has no
// conditions.
func isEmpty(filter any) bool {
	switch f := filter.(type) {
	case nil:
		return true
	case bson.D:
		return len(f) == 0
	case bson.M:
		return len(f) == 0
	case map[string]any:
		return len(f) == 0
	case bson.Raw:
		return len(f) <= 5
	}
	v := reflect.ValueOf(filter)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Equalities returns the equality conditions of filter that MongoDB copies
// into the document an upsert inserts: top-level `field: value` and
// `field: {$eq: value}` conditions, and those of $and clauses, however
// deeply nested. Regular expressions and conditions under $or or $nor are
// not equalities. A path matched twice appears twice, in filter order.
func Equalities(filter any) (bson.D, error) {
	var out bson.D
	if err := equalities(filter, &out, 0); err != nil {
		return out, named(err)
	}
	return out, nil
}

// named prefixes an error of an exported function with the package's
// name; the unexported functions, which call each other, leave it off.
func named(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("mql: %w", err)
}

func equalities(filter any, out *bson.D, depth int) error {
	if depth > 100 {
		return fmt.Errorf("filter nested deeper than 100 $and levels: %w", ErrBadDocument)
	}
	d, err := toD(filter)
	if err != nil {
		return err
	}
	for _, e := range d {
		if e.Key == "$and" {
			clauses, err := array(e.Value)
			if err != nil {
				return fmt.Errorf("$and: %w", err)
			}
			for _, c := range clauses {
				if err := equalities(c, out, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if strings.HasPrefix(e.Key, "$") {
			continue // $or, $nor, $expr, $text, $where...
		}
		if v, ok := equalityValue(e.Value); ok {
			*out = append(*out, bson.E{Key: e.Key, Value: v})
		}
	}
	return nil
}

// Requires reports whether filter requires cond: whether cond, to the
// letter, is one of its conjuncts, at the top level or inside $and however
// nested, so that every document the filter matches satisfies it. A policy
// uses it in Check to verify that the condition it added with And is still
// there after every other listener ran.
func Requires(filter any, cond bson.E) (bool, error) {
	ok, err := requires(filter, cond, 0)
	return ok, named(err)
}

func requires(filter any, cond bson.E, depth int) (bool, error) {
	if depth > 100 {
		return false, fmt.Errorf("filter nested deeper than 100 $and levels: %w", ErrBadDocument)
	}
	d, err := toD(filter)
	if err != nil {
		return false, err
	}
	for _, e := range d {
		if e.Key == cond.Key && reflect.DeepEqual(e.Value, cond.Value) {
			return true, nil
		}
		if e.Key != "$and" {
			continue
		}
		clauses, err := array(e.Value)
		if err != nil {
			return false, fmt.Errorf("$and: %w", err)
		}
		for _, c := range clauses {
			if ok, err := requires(c, cond, depth+1); ok || err != nil {
				return ok, err
			}
		}
	}
	return false, nil
}

// equalityValue returns the value a condition requires equality with.
func equalityValue(cond any) (any, bool) {
	switch cond.(type) {
	case primitive.Regex, *primitive.Regex:
		return nil, false
	case bson.D, bson.M, map[string]any, bson.Raw:
		d, err := ToD(cond)
		if err != nil || len(d) == 0 || !strings.HasPrefix(d[0].Key, "$") {
			return cond, err == nil // an embedded document, compared whole
		}
		for _, op := range d {
			if op.Key == "$eq" {
				_, regex := op.Value.(primitive.Regex)
				return op.Value, !regex
			}
		}
		return nil, false
	}
	return cond, true
}

// ToD returns doc as a bson.D: a bson.D as it is, a map with its keys in
// sorted order, and any other document (bson.Raw, a struct) decoded from
// its BSON encoding with model.Registry(). nil gives nil.
func ToD(doc any) (bson.D, error) {
	d, err := toD(doc)
	return d, named(err)
}

func toD(doc any) (bson.D, error) {
	switch d := doc.(type) {
	case nil:
		return nil, nil
	case bson.D:
		return d, nil
	case bson.M:
		return fromMap(d), nil
	case map[string]any:
		return fromMap(d), nil
	case bson.Raw:
		return decodeD(d)
	case []byte:
		return decodeD(d)
	case bson.RawValue:
		raw, ok := d.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("a BSON %v: %w", d.Type, ErrBadDocument)
		}
		return decodeD(raw)
	}
	v := reflect.ValueOf(doc)
	if k := v.Kind(); k == reflect.Slice || k == reflect.Array {
		return nil, fmt.Errorf("%T is an array: %w", doc, ErrBadDocument)
	}
	raw, err := bsonio.Marshal(registry, doc)
	if err != nil {
		return nil, fmt.Errorf("%T: %w: %w", doc, ErrBadDocument, err)
	}
	return decodeD(raw)
}

var registry = model.Registry()

func fromMap(m map[string]any) bson.D {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	d := make(bson.D, len(keys))
	for i, k := range keys {
		d[i] = bson.E{Key: k, Value: m[k]}
	}
	return d
}

func decodeD(raw []byte) (bson.D, error) {
	var d bson.D
	if err := bsonio.Unmarshal(registry, raw, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDocument, err)
	}
	return d, nil
}

// Stages returns an aggregation or update pipeline of any shape the driver
// accepts (mongo.Pipeline, []bson.D, bson.A, []bson.M) as a new slice of
// bson.D stages, so that a listener can add stages and assign the result
// back:
//
//	st, err := mql.Stages(e.Pipeline)
//	e.Pipeline = append([]bson.D{{{Key: "$match", Value: cond}}}, st...)
func Stages(pipeline any) ([]bson.D, error) {
	st, err := stages(pipeline)
	return st, named(err)
}

func stages(pipeline any) ([]bson.D, error) {
	if pipeline == nil {
		return []bson.D{}, nil
	}
	elems, err := array(pipeline)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	out := make([]bson.D, len(elems))
	for i, s := range elems {
		if out[i], err = toD(s); err != nil {
			return nil, fmt.Errorf("pipeline stage %d: %w", i, err)
		}
	}
	return out, nil
}

// marshaled returns v's encoding when v encodes itself (bson.ValueMarshaler
// or bson.Marshaler), so that the helpers read what the driver sends, not
// another reading of the same value by reflection.
func marshaled(v any) (bson.RawValue, bool, error) {
	var (
		t    bsontype.Type
		data []byte
		err  error
	)
	switch m := v.(type) {
	case bson.ValueMarshaler:
		t, data, err = m.MarshalBSONValue()
	case bson.Marshaler:
		t, data = bson.TypeEmbeddedDocument, nil
		data, err = m.MarshalBSON()
	default:
		return bson.RawValue{}, false, nil
	}
	if err != nil {
		return bson.RawValue{}, true, fmt.Errorf("%T: %w: %w", v, ErrBadDocument, err)
	}
	rv := bson.RawValue{Type: t, Value: data}
	if verr := rv.Validate(); verr != nil {
		return bson.RawValue{}, true, fmt.Errorf("%T encodes invalid BSON: %w: %w", v, ErrBadDocument, verr)
	}
	return rv, true, nil
}
