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
