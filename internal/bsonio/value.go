package bsonio

import (
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
)

// MarshalValue returns v encoded with registry reg as a field's value, as
// the driver writes it in a document: the API that replaces the
// deprecated bson.MarshalValueWithRegistry.
func MarshalValue(reg *bsoncodec.Registry, v any) (bson.RawValue, error) {
	doc, err := Marshal(reg, bson.D{{Key: "v", Value: v}})
	if err != nil {
		return bson.RawValue{}, err
	}
	return doc.LookupErr("v")
}

// Number returns v as a float64 when it is an int32, an int64 or a double
// that is not NaN.
func Number(v bson.RawValue) (float64, bool) {
	switch v.Type {
	case bson.TypeInt32:
		return float64(v.Int32()), true
	case bson.TypeInt64:
		return float64(v.Int64()), true
	case bson.TypeDouble:
		f := v.Double()
		return f, f == f
	}
	return 0, false
}
