package model

import (
	"bytes"
	"reflect"
	"sync"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// A repository gives a new model its ObjectID before the first event, so
// the document the driver inserts holds its _id. The driver then decodes
// that _id back (mongo's ensureID, into a struct of exactly the type
// idOnly) with the struct codec, which allocates a string for every key of
// the document and lowercases each key it does not know. The codecs here
// make a document with an _id cost no more to insert than one without:
// an ObjectID is encoded without boxing it, and idOnly is decoded by
// looking the _id up in the document's bytes.

// idOnly is the type the driver decodes an inserted document's _id into.
type idOnly = struct {
	ID any `bson:"_id"`
}

var (
	oidType    = reflect.TypeFor[primitive.ObjectID]()
	idOnlyType = reflect.TypeFor[idOnly]()
)

func registerID(r *bsoncodec.Registry) {
	r.RegisterTypeEncoder(oidType, bsoncodec.ValueEncoderFunc(encodeObjectID))
	if next, err := r.LookupDecoder(idOnlyType); err == nil {
		r.RegisterTypeDecoder(idOnlyType, idDecoder{next})
	}
}

// encodeObjectID is the driver's ObjectID encoder without the copy to the
// heap that reading the value through an interface makes.
func encodeObjectID(_ bsoncodec.EncodeContext, vw bsonrw.ValueWriter, v reflect.Value) error {
	if !v.IsValid() || v.Type() != oidType {
		return bsoncodec.ValueEncoderError{Name: "ObjectIDEncodeValue", Types: []reflect.Type{oidType}, Received: v}
	}
	oid, _ := reflect.TypeAssert[primitive.ObjectID](v)
	return vw.WriteObjectID(oid)
}

// bytesReader is a value reader that gives a value's encoding as it is, as
// the driver's BSON value reader does.
type bytesReader interface {
	ReadValueBytes(dst []byte) (bsontype.Type, []byte, error)
}

// idDecoder decodes an idOnly as the struct codec does (the last element
// whose key is "_id" in any case), reading the keys in place. An ObjectID,
// the common case, is set directly; anything else, and a document without
// an _id, goes to next, the registry's struct codec, with its behaviour and
// errors.
type idDecoder struct{ next bsoncodec.ValueDecoder }

// idBufs holds the buffers idDecoder copies documents into, of at most
// maxIDBuf bytes.
var idBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxIDBuf = 64 << 10

// DecodeValue decodes the document vr reads into v, an idOnly.
func (d idDecoder) DecodeValue(dc bsoncodec.DecodeContext, vr bsonrw.ValueReader, v reflect.Value) error {
	br, ok := vr.(bytesReader)
	if !ok || !v.CanSet() || v.Type() != idOnlyType || (vr.Type() != 0 && vr.Type() != bson.TypeEmbeddedDocument) {
		return d.next.DecodeValue(dc, vr, v)
	}
	buf := idBufs.Get().(*[]byte)
	defer idBufs.Put(buf)
	_, doc, err := br.ReadValueBytes((*buf)[:0])
	if err != nil {
		return err
	}
	if cap(doc) <= maxIDBuf {
		*buf = doc // kept for the next document; a large one is let go
	}
	if oid, ok := objectIDOf(dc, doc); ok {
		v.Field(0).Set(reflect.ValueOf(oid))
		return nil
	}
	return d.next.DecodeValue(dc, bsonrw.NewBSONDocumentReader(bytes.Clone(doc)), v)
}

// objectIDOf returns the ObjectID of doc's _id, as the struct codec would
// decode it into an interface: false when doc is not valid, has no _id,
// has one that is not an ObjectID, or dc maps ObjectIDs to another type.
func objectIDOf(dc bsoncodec.DecodeContext, doc bsoncore.Document) (primitive.ObjectID, bool) {
	if doc.Validate() != nil {
		return primitive.ObjectID{}, false
	}
	length, _, _ := bsoncore.ReadLength(doc)
	elems := doc[4 : length-1]
	var id bsoncore.Value
	for len(elems) > 0 {
		el, rest, _ := bsoncore.ReadElement(elems) // checked by Validate
		elems = rest
		if k := el.KeyBytes(); len(k) == 3 && k[0] == '_' && k[1]|0x20 == 'i' && k[2]|0x20 == 'd' {
			id = el.Value()
		}
	}
	if id.Type != bson.TypeObjectID {
		return primitive.ObjectID{}, false
	}
	if t, err := dc.LookupTypeMapEntry(bson.TypeObjectID); err != nil || t != oidType {
		return primitive.ObjectID{}, false
	}
	return id.ObjectID(), true
}
