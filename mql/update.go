package mql

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"go.mongodb.org/mongo-driver/bson"
)

// Update is an update as a BeforeUpdate listener reads and extends it:
// either a document of operators ($set, $inc, ...) or an update pipeline.
// ParseUpdate copies what it changes, so the caller's update value is never
// modified. A typical listener:
//
//	u, err := mql.ParseUpdate(e.Update)
//	if err != nil {
//		return err
//	}
//	if !u.Touches("updatedAt") {
//		u.Add("$set", "updatedAt", time.Now())
//	}
//	e.Update = u.Value()
type Update struct {
	ops    bson.D   // the operators, copied; nil for a pipeline
	stages []bson.D // the pipeline, copied; nil for a document
}

// ParseUpdate reads update, an update document of operators or an update
// pipeline of any shape the driver accepts. A nil update, an empty one, or
// a document with a field that is not an operator (a replacement, which
// Save writes) is an error wrapping ErrBadDocument.
func ParseUpdate(update any) (*Update, error) {
	u, err := parseUpdate(update)
	return u, named(err)
}

func parseUpdate(update any) (*Update, error) {
	if update == nil {
		return nil, fmt.Errorf("nil update: %w", ErrBadDocument)
	}
	if IsPipeline(update) {
		st, err := stages(update)
		if err != nil {
			return nil, err
		}
		if len(st) == 0 {
			return nil, fmt.Errorf("empty update pipeline: %w", ErrBadDocument)
		}
		return &Update{stages: st}, nil
	}
	d, err := toD(update)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	if err := checkOperators(d); err != nil {
		return nil, err
	}
	return &Update{ops: slices.Clone(d)}, nil
}

// IsPipeline reports whether update is an update pipeline (an array of
// stages) rather than an update document.
func IsPipeline(update any) bool {
	switch update.(type) {
	case nil, bson.D, bson.M, map[string]any, bson.Raw, []byte:
		return false
	}
	_, err := array(update)
	return err == nil
}

// CheckOperators returns an error wrapping ErrBadDocument unless every
// field of the update document d is an operator, and there is one.
func CheckOperators(d bson.D) error {
	return named(checkOperators(d))
}

func checkOperators(d bson.D) error {
	if len(d) == 0 {
		return fmt.Errorf("empty update document: %w", ErrBadDocument)
	}
	for _, e := range d {
		if !strings.HasPrefix(e.Key, "$") {
			return fmt.Errorf("update field %q is not an operator such as $set (to replace a whole document, use Save): %w", e.Key, ErrBadDocument)
		}
	}
	return nil
}

// IsPipeline reports whether u is an update pipeline.
func (u *Update) IsPipeline() bool { return u.stages != nil }

// Operators returns the update document's operators, or nil for a
// pipeline. Treat it as read-only; change it with Add or SetOperator.
func (u *Update) Operators() bson.D { return u.ops }

// Stages returns the pipeline's stages, or nil for an update document.
// Treat it as read-only; change it with Add or SetStages.
func (u *Update) Stages() []bson.D { return u.stages }

// Operator returns the fields of operator op (such as "$set") as a bson.D,
// and whether the update has it.
func (u *Update) Operator(op string) (bson.D, bool, error) {
	d, ok, err := u.operator(op)
	return d, ok, named(err)
}

func (u *Update) operator(op string) (bson.D, bool, error) {
	for _, e := range u.ops {
		if e.Key == op {
			d, err := toD(e.Value)
			if err != nil {
				return nil, true, fmt.Errorf("update %s: %w", op, err)
			}
			return d, true, nil
		}
	}
	return nil, false, nil
}

// SetOperator sets operator op to fields, replacing what it held, or
// removes it when fields is empty.
func (u *Update) SetOperator(op string, fields bson.D) {
	i := slices.IndexFunc(u.ops, func(e bson.E) bool { return e.Key == op })
	switch {
	case i >= 0 && len(fields) == 0:
		u.ops = slices.Delete(u.ops, i, i+1)
	case i >= 0:
		u.ops[i].Value = fields
	case len(fields) > 0:
		u.ops = append(u.ops, bson.E{Key: op, Value: fields})
	}
}

// SetStages replaces the pipeline's stages.
func (u *Update) SetStages(stages []bson.D) { u.stages = stages }

// Touches reports whether the update writes path, a part of it or a
// document that holds it: "a.b" is touched by $set of "a", "a.b" or
// "a.b.c", and by $rename to or from any of them. In a pipeline, $set,
// $addFields and $unset stages are read, and $project, $replaceRoot and
// $replaceWith touch every path, since they may drop any field.
func (u *Update) Touches(path string) bool {
	for _, op := range u.ops {
		if operatorTouches(op, path) {
			return true
		}
	}
	for _, st := range u.stages {
		for _, s := range st {
			if stageTouches(s, path) {
				return true
			}
		}
	}
	return false
}

// operatorTouches reports whether update operator op writes path, a part
// of it or a document that holds it, by a field or a $rename's target.
func operatorTouches(op bson.E, path string) bool {
	d, err := ToD(op.Value)
	if err != nil {
		return true // unreadable: assume the worst
	}
	for _, f := range d {
		if PathsOverlap(f.Key, path) {
			return true
		}
		if to, ok := RenameTarget(f.Value); ok && op.Key == "$rename" && PathsOverlap(to, path) {
			return true
		}
	}
	return false
}

// stageTouches reports whether stage s of an update pipeline writes
// path, a part of it or a document that holds it.
func stageTouches(s bson.E, path string) bool {
	switch s.Key {
	case "$replaceRoot", "$replaceWith", "$project":
		return true // may drop or rewrite any field
	case "$unset":
		names, err := array(s.Value)
		if err != nil {
			names = []any{s.Value}
		}
		return slices.ContainsFunc(names, func(n any) bool {
			name, ok := n.(string)
			return ok && PathsOverlap(name, path)
		})
	case "$set", "$addFields":
		d, err := ToD(s.Value)
		if err != nil {
			return true
		}
		return slices.ContainsFunc(d, func(f bson.E) bool { return PathsOverlap(f.Key, path) })
	}
	return false
}

// RenameTarget returns the path that v, the value of a field of $rename,
// moves the field to, read as the driver encodes it: a string, a
// bson.RawValue of one, or any value that encodes to a string (a named
// string type, a type with its own MarshalBSONValue). ok is false for
// other values, which the server refuses as a $rename target. $rename is
// the one update operator whose values name paths.
func RenameTarget(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bson.RawValue:
		return t.StringValueOK()
	case nil:
		return "", false
	}
	raw, err := bsonio.Marshal(registry, bson.D{{Key: "v", Value: v}})
	if err != nil {
		return "", false
	}
	return raw.Lookup("v").StringValueOK()
}

// PathsOverlap reports whether dotted paths a and b name the same field,
// or one holds the other: "a" and "a.b" overlap, "a" and "ab" do not.
func PathsOverlap(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || (strings.HasPrefix(b, a) && b[len(a)] == '.')
}

// Add adds path: value to operator op of an update document ($set,
// $setOnInsert, $inc, $unset, ...). On a pipeline, where operators do not
// exist, it appends a stage that does the same: $set sets the value,
// $setOnInsert sets it only where the field is missing (a pipeline cannot
// tell an insert), and $inc adds to the field's value or to 0. Values go
// into pipelines as $literal, so a string starting with "$" stays a string.
// Add does not check that path is untouched; call Touches first.
func (u *Update) Add(op, path string, value any) error {
	return named(u.add(op, path, value))
}

func (u *Update) add(op, path string, value any) error {
	if u.stages != nil {
		lit := bson.D{{Key: "$literal", Value: value}}
		var expr any
		switch op {
		case "$set":
			expr = lit
		case "$setOnInsert":
			expr = bson.D{{Key: "$ifNull", Value: bson.A{"$" + path, lit}}}
		case "$inc":
			expr = bson.D{{Key: "$add", Value: bson.A{bson.D{{Key: "$ifNull", Value: bson.A{"$" + path, 0}}}, lit}}}
		default:
			return fmt.Errorf("update operator %s cannot be added to an update pipeline: %w", op, ErrBadDocument)
		}
		u.stages = append(u.stages, bson.D{{Key: "$set", Value: bson.D{{Key: path, Value: expr}}}})
		return nil
	}
	fields, _, err := u.operator(op)
	if err != nil {
		return err
	}
	// A new slice: the caller's document may share fields' backing array.
	fields = append(fields[:len(fields):len(fields)], bson.E{Key: path, Value: value})
	u.SetOperator(op, fields)
	return nil
}

// Value returns the update to assign to Event.Update: a bson.D of
// operators, or a []bson.D pipeline.
func (u *Update) Value() any {
	if u.stages != nil {
		return u.stages
	}
	return u.ops
}

// Array returns the elements of an array value: a bson.A, a []any, a
// bson.RawValue of an array, a value that encodes itself as one, or any
// other slice or array but of bytes. A document (bson.D, bson.Raw) is not
// one.
func Array(v any) ([]any, error) {
	a, err := array(v)
	return a, named(err)
}

func array(v any) ([]any, error) {
	switch a := v.(type) {
	case bson.A:
		return a, nil
	case []any:
		return a, nil
	case bson.RawValue:
		return rawArray(a)
	case bson.D, bson.Raw, []byte:
		return nil, fmt.Errorf("%T is not an array: %w", v, ErrBadDocument)
	}
	if raw, ok, err := marshaled(v); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return rawArray(raw)
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); (k != reflect.Slice && k != reflect.Array) || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, fmt.Errorf("%T is not an array: %w", v, ErrBadDocument)
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, nil
}

// rawArray returns the elements of a, a BSON array, as bson.RawValue.
func rawArray(a bson.RawValue) ([]any, error) {
	arr, ok := a.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("%v is not an array: %w", a.Type, ErrBadDocument)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = v
	}
	return out, nil
}
