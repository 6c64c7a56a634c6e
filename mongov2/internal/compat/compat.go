// Package compat holds the few adapters the generated v2 line calls where
// driver v2 changed a shape rather than a name: options as Listers
// instead of structs, and results the v1 line's code reads differently.
// It is written by hand; everything that calls it is generated from the
// v1 line (internal/genv2).
package compat

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Structs applies each of ls, once, to an options struct of its own, and
// returns them as structs of type S (the same type as T, or one with
// fields of the same names, such as UpdateOneOptions for
// UpdateManyOptions). A nil Lister is skipped. A Lister that sets
// driver v2's internal options (package xoptions: "addCommandFields"
// splices fields into the command, past every listener) is refused with
// ErrInternalOptions. The Listers are read once,
// so what the caller's code sees is what the driver is sent. A setter's
// error, or a panic of List or a setter (ErrListerPanicked), is returned,
// naming the Lister's position and type.
func Structs[S, T any](ls []options.Lister[T]) ([]*S, error) {
	out := make([]*S, 0, len(ls))
	for i, l := range ls {
		if isNil(l) {
			continue
		}
		t, err := read(l)
		if err != nil {
			return nil, fmt.Errorf("options %d (%T): %w", i, l, err)
		}
		if internal(t) {
			return nil, fmt.Errorf("options %d (%T) set driver-internal options (xoptions), such as fields added to the command, which the repository's listeners cannot judge: %w", i, l, ErrInternalOptions)
		}
		out = append(out, convert[S](t))
	}
	return out, nil
}

// ErrListerPanicked is returned, wrapped, when a caller's Lister, or one
// of its setters, panics.
var ErrListerPanicked = errors.New("the options Lister panicked")

// read applies l to a new struct, returning a setter's error, or a panic
// of the caller's code as an error.
func read[T any](l options.Lister[T]) (t *T, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("%w: %v", ErrListerPanicked, r)
		}
	}()
	t = new(T)
	if err := apply(t, l); err != nil {
		return nil, err
	}
	return t, nil
}

// apply runs l's setters on t, stopping at the first error.
func apply[T any](t *T, l options.Lister[T]) error {
	if isNil(l) {
		return nil
	}
	for _, f := range l.List() {
		if f == nil {
			continue
		}
		if err := f(t); err != nil {
			return err
		}
	}
	return nil
}

// ErrInternalOptions is returned, wrapped, for options that set driver
// v2's internal options, which the v1 line has no counterpart of and its
// policies cannot judge.
var ErrInternalOptions = errors.New("driver-internal options are refused")

// internal reports whether options struct t sets the driver's internal
// options.
func internal[T any](t *T) bool {
	f := reflect.ValueOf(t).Elem().FieldByName("Internal")
	return f.IsValid() && !f.IsZero()
}

// Struct returns the options l sets, as a struct of type S. A setter's
// error (v2's builders return none) stops it there. Struct is for the
// library's own builders; a caller's Listers go through Structs.
func Struct[S, T any](l options.Lister[T]) *S {
	t := new(T)
	_ = apply(t, l)
	return convert[S](t)
}

// StructOrNil returns the options l sets, or nil for a nil l.
func StructOrNil[T any](l options.Lister[T]) *T {
	if isNil(l) {
		return nil
	}
	return Struct[T](l)
}

// Of returns a Lister that sets the fields s sets (those not zero), as
// v1's driver merged option structs.
func Of[T, S any](s *S) options.Lister[T] { return &lister[T, S]{s} }

// All returns Of of each of ss.
func All[T, S any](ss []*S) []options.Lister[T] {
	out := make([]options.Lister[T], len(ss))
	for i, s := range ss {
		out[i] = Of[T](s)
	}
	return out
}

// Set applies l to s, a struct v1 code set with setters, and returns s.
func Set[S, T any](s *S, l options.Lister[T]) *S {
	t := convert[T](s)
	_ = apply(t, l)
	*s = *convert[S](t)
	return s
}

// IndexOptions returns a builder of the options s sets, for
// mongo.IndexModel.
func IndexOptions(s *options.IndexOptions) *options.IndexOptionsBuilder {
	b := options.Index()
	if s != nil {
		b.Opts = append(b.Opts, Of[options.IndexOptions](s).List()...)
	}
	return b
}

// Distinct returns the values of a distinct result, as v1's Distinct did.
func Distinct(r *mongo.DistinctResult) ([]any, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	var out []any
	if err := r.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// Dropped returns v1's results of dropping indexes: no reply document.
func Dropped(err error) (bson.Raw, error) { return nil, err }

// Ok returns v and no error, for a v2 call that cannot fail where v1's
// could.
func Ok[T any](v T) (T, error) { return v, nil }

type lister[T, S any] struct{ s *S }

func (l *lister[T, S]) List() []func(*T) error {
	if l.s == nil {
		return nil
	}
	return []func(*T) error{func(t *T) error {
		copyFields(reflect.ValueOf(t).Elem(), reflect.ValueOf(l.s).Elem(), true)
		return nil
	}}
}

func isNil[T any](l options.Lister[T]) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// convert returns a new *D with the fields of s of the same names.
func convert[D, S any](s *S) *D {
	if d, ok := any(s).(*D); ok {
		c := *d
		return &c
	}
	d := new(D)
	if s != nil {
		copyFields(reflect.ValueOf(d).Elem(), reflect.ValueOf(s).Elem(), false)
	}
	return d
}

// pairs caches, per destination and source struct type, the indexes of
// the fields they share by name and assignable type.
var pairs sync.Map // [2]reflect.Type -> [][2]int

func copyFields(dst, src reflect.Value, setOnly bool) {
	key := [2]reflect.Type{dst.Type(), src.Type()}
	v, ok := pairs.Load(key)
	if !ok {
		var ps [][2]int
		for i := range dst.NumField() {
			df := dst.Type().Field(i)
			if sf, ok := src.Type().FieldByName(df.Name); ok && df.IsExported() && len(sf.Index) == 1 && sf.Type.AssignableTo(df.Type) {
				ps = append(ps, [2]int{i, sf.Index[0]})
			}
		}
		v, _ = pairs.LoadOrStore(key, ps)
	}
	for _, p := range v.([][2]int) {
		f := src.Field(p[1])
		if setOnly && f.IsZero() {
			continue
		}
		dst.Field(p[0]).Set(f)
	}
}

// Value returns a ValueMarshaler's results with v1's type for the first.
func Value(t byte, data []byte, err error) (bson.Type, []byte, error) {
	return bson.Type(t), data, err
}

// Byte returns bson.MarshalValue's results with the type as a byte, as
// driver v2's ValueMarshaler returns it.
func Byte(t bson.Type, data []byte, err error) (byte, []byte, error) {
	return byte(t), data, err
}
