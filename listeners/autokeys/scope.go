package autokeys

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// A scoped inc field (scope=projectId+docType) has one sequence per
// scope: "<seq>~<value>~<value>", each value escaped so that two scopes
// never share a name. Its unique index is on the scope fields and the
// field, and a scope's sequence is moved past the data of that scope when
// first used. A scope field that a policy sets (the tenant field) takes
// its value from the policy (ScopeSource).

// ErrEmptyScope is wrapped by the error of an insert or upsert whose model
// leaves empty (the zero value) a field that scopes one of its numbers.
var ErrEmptyScope = errors.New("autokeys: a field that scopes a number is empty")

// scope is where a number is unique: the values of the scope fields. The
// zero scope is the whole collection.
type scope struct {
	key    string // the sequence name's suffix; "" for the whole collection
	values []any  // the scope fields' values, in the field's Scope order
}

// scoped reports whether f is numbered per scope.
func scoped(f *fieldPlan) bool { return len(f.Scope) > 0 }

// where returns the filter of sc's documents, or nil for the whole
// collection.
func (sc scope) where(f *fieldPlan) bson.D {
	var d bson.D
	for i, v := range sc.values {
		d = append(d, bson.E{Key: f.Scope[i].BSON, Value: v})
	}
	return d
}

// scopeOf returns the scope of field f of the model mv: a scope field a
// ScopeSource fills takes the value it gives for the one the model holds.
// It refuses, before anything is reserved, what the source refuses (a
// request without the tenant, so that it cannot use up a tenant's
// numbers) and an empty scope field.
func (k *Keys) scopeOf(ctx context.Context, p *plan, f *fieldPlan, mv reflect.Value) (scope, error) {
	if !scoped(f) {
		return scope{}, nil
	}
	return scopeFrom(p, f, func(i int) (reflect.Value, error) {
		return fillScope(ctx, p, f, i, f.Scope[i].Value(mv))
	})
}

// fillScope returns the value scope field i of f has in the document
// written under ctx, the model (or the upsert) giving it named.
func fillScope(ctx context.Context, p *plan, f *fieldPlan, i int, named reflect.Value) (reflect.Value, error) {
	if f.fill[i] == nil {
		return named, nil
	}
	v, err := f.fill[i].ScopeValue(ctx, p.schema, &f.Scope[i], named)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("%v field %s is numbered per %s: %w", p.schema.Type, f.Name, f.Scope[i].BSON, err)
	}
	return v, nil
}

// storedScope returns the scope of f of mv, a model that was written.
func storedScope(p *plan, f *fieldPlan, mv reflect.Value) (scope, error) {
	return scopeFrom(p, f, func(i int) (reflect.Value, error) { return f.Scope[i].Value(mv), nil })
}

// scopeFrom builds the scope of f from the value of each scope field,
// which value(i) gives.
func scopeFrom(p *plan, f *fieldPlan, value func(i int) (reflect.Value, error)) (scope, error) {
	var sc scope
	for i := range f.Scope {
		v, err := value(i)
		if err != nil {
			return scope{}, err
		}
		if v.IsZero() {
			return scope{}, fmt.Errorf("autokeys: %v field %s `auto:\"%s\"` is numbered per %s, and its scope field %s is empty: set it in the model (for an upsert, in the filter or the update): %w",
				p.schema.Type, f.Name, f.Tag, scopeNames(f), f.Scope[i].Name, ErrEmptyScope)
		}
		sc.values = append(sc.values, v.Interface())
		sc.key += "~" + scopeText(v)
	}
	return sc, nil
}

// scopeNames returns f's scope as its tag writes it.
func scopeNames(f *fieldPlan) string {
	var names []string
	for _, s := range f.Scope {
		names = append(names, s.BSON)
	}
	return strings.Join(names, "+")
}

// escaper keeps a value's text from containing what separates the parts
// of a sequence name, or what a name may not contain.
var escaper = strings.NewReplacer("%", "%25", "~", "%7E", "/", "%2F", "@", "%40", "#", "%23", "\x00", "%00")

// scopeText returns v, a scope field's value, as text for a sequence name.
func scopeText(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case uuid.UUID:
		return x.String()
	case primitive.ObjectID:
		return x.Hex()
	}
	switch {
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10)
	case v.CanUint():
		return strconv.FormatUint(v.Uint(), 10)
	}
	return escaper.Replace(v.String())
}

// upsertScope returns the scope of the document an upsert of f may
// insert: each scope field's value as the update sets it ($setOnInsert,
// where the repository puts the filter's equalities, or $set); for a
// field a ScopeSource fills, the value the final filter requires when the
// update sets none, and then the value the source gives for it.
func (k *Keys) upsertScope(ctx context.Context, p *plan, f *fieldPlan, filter any, u *mql.Update) (scope, error) {
	if !scoped(f) {
		return scope{}, nil
	}
	return scopeFrom(p, f, func(i int) (reflect.Value, error) {
		v, err := upsertValue(p, f, i, u)
		if err != nil || f.fill[i] == nil {
			return v, err
		}
		if v.IsZero() {
			if v, err = filterValue(p, f, i, filter); err != nil {
				return v, err
			}
		}
		return fillScope(ctx, p, f, i, v)
	})
}

// filterValue returns the value filter's equalities give scope field i of
// f, as a value of the field's type; the zero value when they give none.
func filterValue(p *plan, f *fieldPlan, i int, filter any) (reflect.Value, error) {
	sf := &f.Scope[i]
	eqs, err := mql.Equalities(filter)
	if err != nil {
		return reflect.Value{}, err
	}
	for _, eq := range eqs {
		if eq.Key != sf.BSON {
			continue
		}
		if v, err := p.schema.Convert(sf, eq.Value); err == nil && !v.IsZero() {
			return v, nil
		}
	}
	return reflect.New(sf.Type).Elem(), nil
}

// upsertValue returns the value the upsert u gives scope field i of f, as
// a value of the field's type; the zero value when it gives none.
func upsertValue(p *plan, f *fieldPlan, i int, u *mql.Update) (reflect.Value, error) {
	sf := &f.Scope[i]
	for _, op := range []string{"$setOnInsert", "$set"} {
		fields, _, err := u.Operator(op)
		if err != nil {
			return reflect.Value{}, err
		}
		for _, x := range fields {
			if x.Key != sf.BSON {
				continue
			}
			v := x.Value
			if raw, ok := v.(bson.RawValue); ok {
				dst := reflect.New(sf.Type)
				if err := raw.Unmarshal(dst.Interface()); err != nil {
					return reflect.Value{}, fmt.Errorf("autokeys: %v field %s: the upsert's %s of scope field %s: %w", p.schema.Type, f.Name, op, sf.Name, err)
				}
				return dst.Elem(), nil
			}
			cv, err := p.schema.Convert(sf, v)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("autokeys: %v field %s: the upsert's %s of scope field %s: %w", p.schema.Type, f.Name, op, sf.Name, err)
			}
			return cv, nil
		}
	}
	return reflect.New(sf.Type).Elem(), nil
}
