// Package model parses and caches what mgmevents needs to know about a model
// type: its collection, its BSON fields, and the `auto` tags that AutoKeys
// and optimistic locking act on. A type is parsed once; the result is
// immutable and shared, and its hot-path accessors use field indexes.
package model

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/kamva/mgm/v3"
)

// ErrUnsupportedType is returned, wrapped, for a model type that is not a
// pointer to a struct implementing mgm.Model.
var ErrUnsupportedType = errors.New("model: unsupported model type")

// Schema describes one model type. Of returns a new copy on every call:
// changing one changes nothing for anyone else.
type Schema struct {
	// Type is the model type as repositories use it, a pointer to Struct.
	Type reflect.Type
	// Struct is the struct type.
	Struct reflect.Type
	// Collection is the collection name as mgm.CollName computes it.
	Collection string
	// Fields are the struct's BSON fields, inline structs flattened, in
	// declaration order.
	Fields []Field
	// ID is the field stored as `_id`, or nil when the struct has none.
	ID *Field
	// Auto are the fields with an `auto` tag, in declaration order.
	Auto []AutoField
	// Audit are the fields with an `audit` tag, in declaration order.
	Audit []AuditField
	// Version is the `auto:"version"` field, or nil.
	Version *AutoField
	// Policies are the fields with a `policy` tag (see PolicyField), in
	// declaration order.
	Policies []PolicyField
	// Indexes are the indexes the `index` tags and the Indexes method
	// declare (see Index), tags first, in declaration order.
	Indexes []Index
	// OtherTags are the key:"value" pairs of the struct tags whose key
	// Schema does not read (every key but bson, policy, auto, audit and
	// index: json:"name", say), of every field of the struct and of the
	// structs it inlines, stored or not, in declaration order. A
	// repository reads them to refuse a key that is the name of a policy
	// on its bus (region:"eu" beside a policy "region", which reads only
	// policy:"region"): no listener reads such a key, so the field would
	// go unprotected without an error.
	OtherTags []FieldTag
}

// Field is one BSON field of a model.
type Field struct {
	Name  string       // Go field name
	BSON  string       // key in the BSON document
	Index []int        // for reflect.Value.FieldByIndex, through inline structs
	Type  reflect.Type // the field's Go type
}

// Value returns the field of v, which must be the model's struct value (not
// the pointer).
func (f *Field) Value(v reflect.Value) reflect.Value {
	if len(f.Index) == 1 {
		return v.Field(f.Index[0])
	}
	return v.FieldByIndex(f.Index)
}

type entry struct {
	once sync.Once
	s    *Schema
	err  error
}

var cache sync.Map // reflect.Type -> *entry

// Of returns the schema of model type t, a pointer to a struct that
// implements mgm.Model. The first call for a type parses it; concurrent first
// calls wait for that one parse, and later calls copy the cached result,
// error included. Each call returns a copy of its own, so that no caller
// can change what another, a policy say, reads: callers on a hot path
// keep the copy they got.
func Of(t reflect.Type) (*Schema, error) {
	if t == nil {
		return nil, fmt.Errorf("model: nil type: %w", ErrUnsupportedType)
	}
	e, ok := cache.Load(t)
	if !ok {
		e, _ = cache.LoadOrStore(t, new(entry))
	}
	en := e.(*entry)
	en.once.Do(func() { en.s, en.err = parse(t) })
	if en.err != nil {
		return nil, en.err
	}
	return en.s.clone(), nil
}

// For returns the schema of T, as Of(reflect.TypeFor[T]()).
func For[T any]() (*Schema, error) { return Of(reflect.TypeFor[T]()) }

var modelType = reflect.TypeFor[mgm.Model]()

func parse(t reflect.Type) (*Schema, error) {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("model: type %v must be a pointer to a struct: %w", t, ErrUnsupportedType)
	}
	if !t.Implements(modelType) {
		return nil, fmt.Errorf("model: type %v does not implement mgm.Model (embed mgm.DefaultModel, or write PrepareID, GetID and SetID): %w", t, ErrUnsupportedType)
	}
	s := &Schema{Type: t, Struct: t.Elem()}
	s.Collection = mgm.CollName(reflect.New(s.Struct).Interface().(mgm.Model))
	if err := s.walk(s.Struct, nil, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.buildIndexes(); err != nil {
		return nil, err
	}
	return s, nil
}

// walk collects the BSON fields of st, descending into inline structs.
func (s *Schema) walk(st reflect.Type, prefix []int, seen map[reflect.Type]bool) error {
	if seen[st] {
		return nil
	}
	seen[st] = true
	defer delete(seen, st)
	for i := 0; i < st.NumField(); i++ {
		sf := st.Field(i)
		s.recordTags(sf)
		index := append(append([]int(nil), prefix...), i)
		policyTag, hasPolicy, err := s.policyTag(sf)
		if err != nil {
			return err
		}
		tagged := hasPolicy || hasMetaTag(sf)
		if !sf.IsExported() && !sf.Anonymous {
			if tagged {
				return s.tagErr(sf.Name, string(sf.Tag), "the field is unexported, so it is never stored")
			}
			continue
		}
		tags := bsonTag(sf)
		if tags.skip {
			if tagged {
				return s.tagErr(sf.Name, string(sf.Tag), `the field has bson:"-", so it is never stored`)
			}
			continue
		}
		if tags.inline && sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct && holdsTags(sf.Type.Elem(), map[reflect.Type]bool{}) {
			return s.tagErr(sf.Name, string(sf.Tag), "an inline pointer to a struct whose fields have auto, audit, policy or index tags, which would go unseen: inline the struct by value")
		}
		if tags.inline && sf.Type.Kind() == reflect.Struct {
			if tagged {
				return s.tagErr(sf.Name, string(sf.Tag), "an inline struct cannot be an auto, audit, policy or index field")
			}
			if err := s.walk(sf.Type, index, seen); err != nil {
				return err
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		f := Field{Name: sf.Name, BSON: tags.name, Index: index, Type: sf.Type}
		if s.dominated(f) {
			if hasPolicy {
				return s.shadowErr(f, sf)
			}
			continue
		}
		s.Fields = append(s.Fields, f)
		if err := s.parseTags(f, sf, policyTag, hasPolicy); err != nil {
			return err
		}
	}
	return nil
}

// metaTags are the struct tags Schema reads besides bson and policy.
var metaTags = []string{"auto", "audit", "index"}

// hasMetaTag reports whether sf has one of metaTags.
func hasMetaTag(sf reflect.StructField) bool {
	for _, k := range metaTags {
		if _, ok := sf.Tag.Lookup(k); ok {
			return true
		}
	}
	return false
}

// parseTags parses the tags of f, a stored field (sf its struct field),
// into s; policyTag is its policy tag, when hasPolicy.
func (s *Schema) parseTags(f Field, sf reflect.StructField, policyTag string, hasPolicy bool) error {
	if autoTag, ok := sf.Tag.Lookup("auto"); ok {
		a, err := parseAuto(s, f, autoTag)
		if err != nil {
			return err
		}
		s.Auto = append(s.Auto, a)
	}
	if auditTag, ok := sf.Tag.Lookup("audit"); ok {
		a, err := parseAudit(s, f, auditTag)
		if err != nil {
			return err
		}
		s.Audit = append(s.Audit, a)
	}
	if hasPolicy {
		p, err := parsePolicy(s, f, policyTag)
		if err != nil {
			return err
		}
		s.Policies = append(s.Policies, p)
	}
	return nil
}

// structTag is what the driver's struct codec reads from a bson tag.
type structTag struct {
	name         string
	inline, skip bool
}

// bsonTag reads sf's bson tag by the driver's rules (those of bsoncodec's
// default struct tag parser, which is deprecated for removal in driver 2.0
// without a replacement): the key is the tag's first element, or the field
// name in lower case; "-" skips the field; "inline" may come after the
// key; and a tag with no key:"value" pair at all is the bson tag entire.
func bsonTag(sf reflect.StructField) structTag {
	t := structTag{name: strings.ToLower(sf.Name)}
	tag, ok := sf.Tag.Lookup("bson")
	if !ok && !strings.Contains(string(sf.Tag), ":") && len(sf.Tag) > 0 {
		tag = string(sf.Tag)
	}
	if tag == "-" {
		t.skip = true
		return t
	}
	for i, opt := range strings.Split(tag, ",") {
		if i == 0 && opt != "" {
			t.name = opt
		}
		if opt == "inline" {
			t.inline = true
		}
	}
	return t
}

// dominated applies the driver's rule for a BSON name that appears twice:
// the shallower field wins.
func (s *Schema) dominated(f Field) bool {
	for i := range s.Fields {
		if s.Fields[i].BSON != f.BSON {
			continue
		}
		if len(f.Index) < len(s.Fields[i].Index) {
			s.Fields = append(s.Fields[:i], s.Fields[i+1:]...)
			return false
		}
		return true
	}
	return false
}

// check validates the schema as a whole, after every field was parsed.
func (s *Schema) check() error {
	var autos []AutoField
	for _, a := range s.Auto {
		if !s.has(a.Field) {
			continue // shadowed by a shallower field of the same name
		}
		autos = append(autos, a)
	}
	s.Auto = autos
	if err := s.keepStored(); err != nil {
		return err
	}
	for i := range s.Fields {
		if s.Fields[i].BSON == "_id" {
			s.ID = &s.Fields[i]
		}
	}
	if err := s.checkDateFields(); err != nil {
		return err
	}
	seqs := map[string]*AutoField{}
	for i := range s.Auto {
		a := &s.Auto[i]
		switch a.Kind {
		case Version:
			if s.Version != nil {
				return s.tagErr(a.Name, a.Tag, "a second version field (the first is "+s.Version.Name+")")
			}
			s.Version = a
		case Inc:
			if err := s.resolveScope(a); err != nil {
				return err
			}
			if prev, ok := seqs[a.Seq]; ok && (prev.Start != a.Start || prev.Batch != a.Batch || !sameScope(prev, a)) {
				return s.tagErr(a.Name, a.Tag, fmt.Sprintf("sequence %q is also used by field %s with other start, batch or scope options", a.Seq, prev.Name))
			}
			seqs[a.Seq] = a
		}
	}
	if len(s.Auto) > 64 {
		return fmt.Errorf("model: type %v has %d auto fields; at most 64 are supported: %w", s.Type, len(s.Auto), ErrInvalidTag)
	}
	return nil
}

func (s *Schema) has(f Field) bool {
	for _, g := range s.Fields {
		if g.BSON == f.BSON && slices.Equal(g.Index, f.Index) {
			return true
		}
	}
	return false
}

// FieldByBSON returns the field stored under key, or nil.
func (s *Schema) FieldByBSON(key string) *Field {
	for i := range s.Fields {
		if s.Fields[i].BSON == key {
			return &s.Fields[i]
		}
	}
	return nil
}

// Convert returns v as a value of field f's type, converted when Go allows
// it, or an error that names the model, the field and v's type.
func (s *Schema) Convert(f *Field, v any) (reflect.Value, error) {
	w := reflect.ValueOf(v)
	switch {
	case !w.IsValid():
		return w, fmt.Errorf("model: %v field %s: want a %v, have nil", s.Type, f.Name, f.Type)
	case w.Type().AssignableTo(f.Type):
		return w, nil
	case w.Type().ConvertibleTo(f.Type):
		return w.Convert(f.Type), nil
	}
	return w, fmt.Errorf("model: %v field %s: a %v field cannot hold a %T", s.Type, f.Name, f.Type, v)
}
