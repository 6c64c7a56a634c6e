package encryption

import (
	"bytes"
	"crypto/hmac"

	"github.com/mgmevents/mgmevents/model"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// encryptDocument returns doc, as written by Insert, InsertMany, Save or
// Update, with every encrypted field replaced by its ciphertext, bound to
// the document's _id (or unbound when it has none yet), and the blind
// index of each eq field set after it. A blind index already in doc is
// replaced.
func (x *Encryption) encryptDocument(p *encPlan, coll string, doc bson.Raw) (bson.Raw, error) {
	elems, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	b := unboundValue
	if id, err := doc.LookupErr("_id"); err == nil {
		b = boundTo(id)
	}
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+len(p.fields)*64))
	for _, el := range elems {
		key := el.Key()
		if _, ok := p.bidx[key]; ok {
			continue // recomputed below, from the value
		}
		f, ok := p.fields[key]
		if !ok {
			out = append(out, el...)
			continue
		}
		v := el.Value()
		out = bsoncore.AppendBinaryElement(out, key, EncryptedSubtype, sealValue(x.current, coll, key, v, b))
		if f.Eq {
			h, err := x.blindIndexOf(key, coll, v)
			if err != nil {
				return nil, err
			}
			out = bsoncore.AppendBinaryElement(out, f.BlindIndex(), bson.TypeBinaryGeneric, h)
		}
	}
	out, err = bsoncore.AppendDocumentEnd(out, idx)
	return out, err
}

// blindIndexOf returns the blind index of v in field of coll, after the
// normalizer.
func (x *Encryption) blindIndexOf(field, coll string, v bson.RawValue) ([]byte, error) {
	if x.normalize != nil {
		var g any
		if err := v.Unmarshal(&g); err != nil {
			return nil, err
		}
		nv, err := encodeValue(x.normalize(field, g))
		if err != nil {
			return nil, err
		}
		v = nv
	}
	return blindIndex(x.indexKey.b, coll, field, v), nil
}

// decryptDocument returns doc with every encrypted field decrypted. A field
// that holds anything but a ciphertext is an error: the data was written
// around the encryption, or tampered with.
func (x *Encryption) decryptDocument(p *encPlan, coll string, doc bson.Raw) (bson.Raw, error) {
	elems, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	id, _ := doc.LookupErr("_id")
	var out []byte
	var idx int32
	for i, el := range elems {
		key := el.Key()
		f, ok := p.fields[key]
		if !ok {
			if out != nil {
				out = append(out, el...)
			}
			continue
		}
		v, err := x.decryptValue(coll, key, id, el.Value())
		if err != nil {
			return nil, err
		}
		if f.Eq {
			if err := x.checkBlindIndex(coll, key, id, v, doc.Lookup(f.BlindIndex())); err != nil {
				return nil, err
			}
		}
		if out == nil { // the first encrypted field: copy what came before
			idx, out = bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)))
			for _, prev := range elems[:i] {
				out = append(out, prev...)
			}
		}
		out = bsoncore.AppendValueElement(out, key, bsoncore.Value{Type: v.Type, Data: v.Value})
	}
	if out == nil {
		return doc, nil
	}
	out, err = bsoncore.AppendDocumentEnd(out, idx)
	return out, err
}

// checkBlindIndex compares stored, the blind index read beside the eq
// field field, with the one of its decrypted value v: a blind index copied
// from another document would make an equality query return this one. A
// document read without the index (projected out) is not checked.
func (x *Encryption) checkBlindIndex(coll, field string, id, v, stored bson.RawValue) error {
	if stored.Type == 0 {
		return nil
	}
	want, err := x.blindIndexOf(field, coll, v)
	if err != nil {
		return err
	}
	if _, got, ok := stored.BinaryOK(); !ok || !hmac.Equal(got, want) {
		de := &DecryptError{Collection: coll, Field: field, Reason: "the blind index " + field + BlindIndexSuffix + " is not the value's: it was changed or copied from another document"}
		if id.Type != 0 {
			de.ID = id.String()
		}
		return de
	}
	return nil
}

// decryptValue decrypts v, stored in field of coll in the document whose
// _id is id (zero when it has none).
func (x *Encryption) decryptValue(coll, field string, id, v bson.RawValue) (bson.RawValue, error) {
	fail := func(keyID, reason string) (bson.RawValue, error) {
		de := &DecryptError{Collection: coll, Field: field, KeyID: keyID, Reason: reason}
		if id.Type != 0 {
			de.ID = id.String()
		}
		return bson.RawValue{}, de
	}
	sub, payload, ok := v.BinaryOK()
	if !ok || sub != EncryptedSubtype {
		return fail("", "the field holds plaintext BSON "+v.Type.String()+", not a ciphertext: it was written around the encryption")
	}
	h, reason := parseSealed(payload)
	if reason != "" {
		return fail("", reason)
	}
	k, ok := x.byID[h.keyID]
	if !ok {
		return fail(h.keyID, "the key is not in the key ring")
	}
	plain, reason := h.open(k, coll, field, id)
	if reason != "" {
		return fail(h.keyID, reason)
	}
	return plain, nil
}

// encodeValue returns v as BSON, with the registry of package model.
func encodeValue(v any) (bson.RawValue, error) {
	if rv, ok := v.(bson.RawValue); ok {
		return rv, nil
	}
	var buf bytes.Buffer
	vw, err := bsonrw.NewBSONValueWriter(&buf)
	if err != nil {
		return bson.RawValue{}, err
	}
	enc, err := bson.NewEncoder(vw)
	if err == nil {
		err = enc.SetRegistry(registry)
	}
	if err == nil {
		err = enc.Encode(bson.D{{Key: "v", Value: v}})
	}
	if err != nil {
		return bson.RawValue{}, err
	}
	return bson.Raw(buf.Bytes()).LookupErr("v")
}

// registry reads the BSON the policy judges, as mql does.
var registry = model.Registry()
