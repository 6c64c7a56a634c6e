package model

import (
	"fmt"
	"reflect"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
)

// Registry returns a BSON registry with the driver's defaults plus a codec
// that stores uuid.UUID as binary subtype 4, the standard UUID subtype (the
// driver's default writes subtype 0). Its codecs for bson.Raw,
// primitive.ObjectID and the driver's reading of an inserted _id write and
// read what the driver's do, with fewer allocations. Its structs decode
// strictly (see RegisterStrict): a key that matches a field only in another
// letter case, such as "Tenant" for the field stored as "tenant", is
// ignored rather than decoded into it. Repositories encode
// and decode models with it; give it to the client too, with
// options.Client().SetRegistry, so that filters holding a uuid.UUID match:
//
//	opts := options.Client().ApplyURI(uri).SetRegistry(model.Registry())
func Registry() *bsoncodec.Registry {
	r := bson.NewRegistry()
	RegisterUUID(r)
	registerRaw(r)
	registerID(r)
	_ = RegisterStrict(r) // r has the driver's struct codec, so this cannot fail
	return r
}

// RegisterUUID adds the uuid.UUID codec to r.
func RegisterUUID(r *bsoncodec.Registry) {
	r.RegisterTypeEncoder(uuidType, bsoncodec.ValueEncoderFunc(encodeUUID))
	r.RegisterTypeDecoder(uuidType, bsoncodec.ValueDecoderFunc(decodeUUID))
}

func encodeUUID(_ bsoncodec.EncodeContext, vw bsonrw.ValueWriter, v reflect.Value) error {
	if v.Type() != uuidType {
		return bsoncodec.ValueEncoderError{Name: "encodeUUID", Types: []reflect.Type{uuidType}, Received: v}
	}
	u := v.Interface().(uuid.UUID)
	return vw.WriteBinaryWithSubtype(u[:], bson.TypeBinaryUUID)
}

func decodeUUID(_ bsoncodec.DecodeContext, vr bsonrw.ValueReader, v reflect.Value) error {
	if !v.CanSet() || v.Type() != uuidType {
		return bsoncodec.ValueDecoderError{Name: "decodeUUID", Types: []reflect.Type{uuidType}, Received: v}
	}
	var u uuid.UUID
	switch vr.Type() {
	case bson.TypeBinary:
		data, sub, err := vr.ReadBinary()
		if err != nil {
			return err
		}
		if len(data) != 16 || (sub != bson.TypeBinaryUUID && sub != bson.TypeBinaryUUIDOld && sub != bson.TypeBinaryGeneric) {
			return fmt.Errorf("model: cannot decode binary subtype %#x of %d bytes into uuid.UUID", sub, len(data))
		}
		copy(u[:], data)
	case bson.TypeString:
		s, err := vr.ReadString()
		if err != nil {
			return err
		}
		if u, err = uuid.Parse(s); err != nil {
			return fmt.Errorf("model: decoding uuid.UUID: %w", err)
		}
	case bson.TypeNull:
		if err := vr.ReadNull(); err != nil {
			return err
		}
	case bson.TypeUndefined:
		if err := vr.ReadUndefined(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("model: cannot decode BSON %v into uuid.UUID", vr.Type())
	}
	v.Set(reflect.ValueOf(u))
	return nil
}
