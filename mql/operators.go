package mql

import (
	"fmt"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
)

// What a listener adds to a write (events.Event's Extra and Tombstone) is
// judged on the BSON the driver sends: a value of a type with its own
// encoding (a named string type, a MarshalBSONValue method) reads as what
// it is encoded to, never as its Go value.

// EncodeOperators returns ops, update operators, as the driver sends them
// when it encodes them with reg (model.Registry() when nil): each operator
// with its fields as a bson.D of bson.RawValue, which the driver sends
// verbatim. An operator that holds no document of fields, and a $rename
// whose target is not a string, are errors wrapping ErrBadDocument.
func EncodeOperators(reg *bsoncodec.Registry, ops bson.D) (bson.D, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	if reg == nil {
		reg = registry
	}
	raw, err := bsonio.Marshal(reg, ops)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDocument, err)
	}
	elems, err := raw.Elements()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDocument, err)
	}
	out := make(bson.D, len(elems))
	for i, el := range elems {
		fields, err := operatorFields(el)
		if err != nil {
			return nil, err
		}
		out[i] = bson.E{Key: el.Key(), Value: fields}
	}
	return out, nil
}

// operatorFields returns the fields of operator el as a bson.D of
// bson.RawValue.
func operatorFields(el bson.RawElement) (bson.D, error) {
	op := el.Key()
	doc, ok := el.Value().DocumentOK()
	if !ok {
		return nil, fmt.Errorf("operator %s holds a %v, not a document of fields: %w", op, el.Value().Type, ErrBadDocument)
	}
	fields, err := doc.Elements()
	if err != nil {
		return nil, fmt.Errorf("operator %s: %w: %w", op, ErrBadDocument, err)
	}
	d := make(bson.D, len(fields))
	for j, f := range fields {
		d[j] = bson.E{Key: f.Key(), Value: f.Value()}
		if _, ok := RenameTarget(f.Value()); op == "$rename" && !ok {
			return nil, fmt.Errorf("$rename %q: the target is a %v, not a field name: %w", f.Key(), f.Value().Type, ErrBadDocument)
		}
	}
	return d, nil
}

// Written returns the paths that field f of update operator op writes:
// f's key, and for $rename the target it moves the value to too (see
// RenameTarget). For every other operator the values name no paths
// ($pull's conditions and $push's $sort name fields of array elements).
func Written(op string, f bson.E) []string {
	if op == "$rename" {
		if to, ok := RenameTarget(f.Value); ok {
			return []string{f.Key, to}
		}
	}
	return []string{f.Key}
}
