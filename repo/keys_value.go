package repo

import (
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// refuseKeyValue refuses v, the key an upsert gives its new document for
// auto field a (where says how: the $setOnInsert, the filter's equality),
// when what is written is not a key: v is judged as the repository's
// registry encodes it, as the driver will store it, not by its Go value
// (a json.Number "0" is written as the number 0, a ValueMarshaler may
// write the nil UUID). It must encode non-zero, and of the BSON type the
// field itself encodes as (a 32- or 64-bit integer for an integer field,
// the same binary subtype for a binary one).
func (r *Repository[T]) refuseKeyValue(a *model.AutoField, v any, where string) error {
	if v == nil {
		return fmt.Errorf("%v field %s `auto:\"%s\"`: %s: a key is never null: %w", r.schema.Type, a.BSON, a.Tag, where, ErrInvalidArgument)
	}
	got, err := bsonio.MarshalValue(r.reg, v)
	if err != nil {
		return fmt.Errorf("%v field %s `auto:\"%s\"`: %s: a %T does not encode: %w: %w", r.schema.Type, a.BSON, a.Tag, where, v, ErrInvalidArgument, err)
	}
	if zeroRaw(got) {
		return fmt.Errorf("%v field %s `auto:\"%s\"`: %s is written as zero (BSON %v %v): a key is never zero: %w", r.schema.Type, a.BSON, a.Tag, where, got.Type, got, ErrInvalidArgument)
	}
	want, err := r.fieldEncoding(a)
	if err != nil {
		return err
	}
	if !sameKeyType(got, want) {
		return fmt.Errorf("%v field %s `auto:\"%s\"`: %s: a %T is written as BSON %v; the field (%v) is written as BSON %v: %w", r.schema.Type, a.BSON, a.Tag, where, v, got.Type, a.Type, want.Type, ErrInvalidArgument)
	}
	return nil
}

// fieldEncoding returns how the repository's registry writes a value of
// auto field a's Go type (its zero value; through a pointer, the value
// pointed to).
func (r *Repository[T]) fieldEncoding(a *model.AutoField) (bson.RawValue, error) {
	ft := a.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	v, err := bsonio.MarshalValue(r.reg, reflect.New(ft).Elem().Interface())
	if err != nil {
		return bson.RawValue{}, fmt.Errorf("%v field %s `auto:\"%s\"`: its type %v does not encode: %w", r.schema.Type, a.BSON, a.Tag, a.Type, err)
	}
	return v, nil
}

// sameKeyType reports whether got, a key as written, is of the BSON type
// of want, the field's own encoding: both integers (32 or 64 bits, which
// the driver writes by size), or the same type, and for a binary the same
// subtype.
func sameKeyType(got, want bson.RawValue) bool {
	isInt := func(t bsontype.Type) bool { return t == bson.TypeInt32 || t == bson.TypeInt64 }
	switch {
	case isInt(want.Type):
		return isInt(got.Type)
	case got.Type != want.Type:
		return false
	case got.Type == bson.TypeBinary:
		gs, _ := got.Binary()
		ws, _ := want.Binary()
		return gs == ws
	}
	return true
}
