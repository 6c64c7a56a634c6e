package outbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// subject is a document's _id as Message.Subject: hex for an ObjectID,
// the string itself, or else relaxed extended JSON, such as {"a":1}; an
// _id whose extended JSON is longer than maxSubject, or loses what is not
// UTF-8, is its lease key's hash.
func subject(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return v.Hex()
	case string:
		return v
	}
	if s, ok := extJSON(id); ok && len(s) <= maxSubject && !strings.Contains(s, `\ufffd`) && !strings.ContainsRune(s, utf8.RuneError) {
		return s
	}
	return hashKey(id)
}

// maxSubject is the longest extended JSON a subject holds.
const maxSubject = 256

// idKey is a document's _id in a lease key and in Seqs, its type told
// apart: the hex of an ObjectID, a string of up to maxSubject bytes, or
// else the SHA-256 of the _id's BSON type and bytes, which tells apart
// every two _ids the server does, in a key of bounded length.
func idKey(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return "o:" + v.Hex()
	case string:
		if len(v) <= maxSubject {
			return "s:" + v
		}
	}
	return hashKey(id)
}

// hashKey is the SHA-256 of id's BSON type and bytes, in hex.
func hashKey(id any) string {
	h := sha256.New()
	if t, b, err := bson.MarshalValue(id); err == nil {
		h.Write([]byte{byte(t)})
		h.Write(b)
	} else {
		fmt.Fprintf(h, "%T:%#v", id, id)
	}
	return "h:" + hex.EncodeToString(h.Sum(nil))
}

// extJSON is id as relaxed extended JSON, if the driver can write it.
func extJSON(id any) (string, bool) {
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: id}}, false, false)
	if s, ok := strings.CutPrefix(string(b), `{"v":`); err == nil && ok {
		return strings.TrimSuffix(s, "}"), true
	}
	return "", false
}

// tenant reads the tenant field of a document, or "".
func tenant(doc bson.Raw, field string) string {
	if field == "" {
		return ""
	}
	s, _ := doc.Lookup(field).StringValueOK()
	return s
}
