package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// EncryptedSubtype is the BSON binary subtype of every encrypted value: a
// user-defined subtype (0x80–0xFF), not CSFLE's 6. The payload is, byte by
// byte:
//
//	offset  length  content
//	0       1       format version, 0x01
//	1       1       flags: bit 0 set = bound to the document's _id, clear =
//	                bound to collection and field only; other bits 0
//	2       1       n, the length of the key ID (1–255)
//	3       n       the key ID, as given in Key.ID
//	3+n     1       the BSON type of the original value (0x02 string, 0x09
//	                date, 0x03 document, 0x04 array, 0x12 int64, ...)
//	4+n     12      the AES-GCM nonce, random for each value
//	16+n    m+16    AES-256-GCM ciphertext of the value's m BSON bytes (the
//	                bytes after the type and key of an element), then the
//	                16-byte tag
//
// The additional authenticated data is the header (bytes 0 to 4+n), then
// the collection name and the field's BSON name, each as a 4-byte
// little-endian length and the bytes, then, for a bound value, the _id as
// its BSON type, a 4-byte length and its BSON bytes (an int32 _id as the
// int64 of the same number). Changing any byte, the flags included, or
// moving the value to another field, document or collection fails the tag
// check.
const EncryptedSubtype byte = 0x8E

// BlindIndexLen is the length of a blind index: the first 16 bytes of an
// HMAC-SHA-256, stored as BSON binary subtype 0.
const BlindIndexLen = 16

const (
	formatV1   = 0x01
	flagBound  = 0x01
	nonceLen   = 12
	tagLen     = 16
	aadDomain  = "mgmevents/v1 field\x00"
	bidxDomain = "mgmevents/v1 bidx\x00"
)

// ringKey is a derived key with its cipher.
type ringKey struct {
	derivedKeys
	gcm cipher.AEAD
}

func newRing(d derivedKeys) (*ringKey, error) {
	block, err := aes.NewCipher(d.aead)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &ringKey{derivedKeys: d, gcm: gcm}, nil
}

// sealBinding is what a value is bound to besides collection and field: the
// document's _id, or nothing (unbound).
type sealBinding struct {
	bound bool
	id    bson.RawValue // canonical: an int32 as int64
}

var unboundValue = sealBinding{}

func boundTo(id bson.RawValue) sealBinding { return sealBinding{bound: true, id: canonicalNumber(id)} }

// sealAAD returns the additional authenticated data of a value with header hdr.
func sealAAD(hdr []byte, coll, field string, b sealBinding) []byte {
	out := make([]byte, 0, len(aadDomain)+len(hdr)+len(coll)+len(field)+len(b.id.Value)+16)
	out = append(out, aadDomain...)
	out = append(out, hdr...)
	out = appendLP(out, []byte(coll))
	out = appendLP(out, []byte(field))
	if b.bound {
		out = append(out, byte(b.id.Type))
		out = appendLP(out, b.id.Value)
	}
	return out
}

func appendLP(dst, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// sealValue encrypts v for field of coll with key k under binding b, and returns
// the stored payload.
func sealValue(k *ringKey, coll, field string, v bson.RawValue, b sealBinding) []byte {
	n := int(k.idLen)
	out := make([]byte, 0, 4+n+nonceLen+len(v.Value)+tagLen)
	flags := byte(0)
	if b.bound {
		flags = flagBound
	}
	out = append(out, formatV1, flags, k.idLen)
	out = append(out, k.id...)
	out = append(out, byte(v.Type))
	hdr := out
	nonce := make([]byte, nonceLen)
	if _, err := rand.Read(nonce); err != nil {
		panic("encryption: crypto/rand failed: " + err.Error()) // never returns an error since Go 1.24
	}
	out = append(out, nonce...)
	return k.gcm.Seal(out, nonce, v.Value, sealAAD(hdr, coll, field, b))
}

// sealedHeader is a parsed stored payload.
type sealedHeader struct {
	bound bool
	keyID string
	typ   bsontype.Type
	hdr   []byte // bytes 0 to 4+n
	nonce []byte
	ct    []byte
}

// parseSealed reads the header of payload, or says why it cannot.
func parseSealed(payload []byte) (sealedHeader, string) {
	if len(payload) < 4 {
		return sealedHeader{}, "the value is too short to be a ciphertext"
	}
	if payload[0] != formatV1 {
		return sealedHeader{}, fmt.Sprintf("unknown format version %d", payload[0])
	}
	if payload[1]&^flagBound != 0 {
		return sealedHeader{}, "unknown flags"
	}
	n := int(payload[2])
	if n == 0 || len(payload) < 4+n+nonceLen+tagLen {
		return sealedHeader{}, "the value is too short to be a ciphertext"
	}
	return sealedHeader{
		bound: payload[1]&flagBound != 0,
		keyID: string(payload[3 : 3+n]),
		typ:   bsontype.Type(payload[3+n]),
		hdr:   payload[:4+n],
		nonce: payload[4+n : 4+n+nonceLen],
		ct:    payload[4+n+nonceLen:],
	}, ""
}

// open decrypts h, read from field of coll in a document whose _id is id
// (a zero RawValue when it has none). It returns the original value, or
// the reason it cannot.
func (h sealedHeader) open(k *ringKey, coll, field string, id bson.RawValue) (bson.RawValue, string) {
	b := unboundValue
	if h.bound {
		if id.Type == 0 {
			return bson.RawValue{}, "the value is bound to its document's _id, and the document has none (was _id projected out?)"
		}
		b = boundTo(id)
	}
	plain, err := k.gcm.Open(nil, h.nonce, h.ct, sealAAD(h.hdr, coll, field, b))
	if err != nil {
		return bson.RawValue{}, "authentication failed: a wrong key, or a ciphertext that was changed or moved from another field or document"
	}
	v := bson.RawValue{Type: h.typ, Value: plain}
	if err := v.Validate(); err != nil {
		return bson.RawValue{}, "the decrypted value is not valid BSON"
	}
	return v, ""
}

// blindIndex returns the blind index of v, already normalized, in field of
// coll: a keyed hash of the canonical value, so that int32 and int64
// numbers of the same value match.
func blindIndex(key []byte, coll, field string, v bson.RawValue) []byte {
	v = canonicalNumber(v)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(bidxDomain))
	m.Write(appendLP(appendLP(nil, []byte(coll)), []byte(field)))
	m.Write([]byte{byte(v.Type)})
	m.Write(v.Value)
	return m.Sum(nil)[:BlindIndexLen]
}

// canonicalNumber returns v with an int32 as the int64 of the same number.
func canonicalNumber(v bson.RawValue) bson.RawValue {
	if v.Type == bson.TypeInt32 {
		return bson.RawValue{Type: bson.TypeInt64, Value: bsoncore.AppendInt64(nil, int64(v.Int32()))}
	}
	return v
}
