package outbox

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// subject is a document's _id as Message.Subject: hex for an ObjectID,
// the string itself, or else relaxed extended JSON, which tells apart
// _ids such as {a: 1} and {a: "1"}.
func subject(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return v.Hex()
	case string:
		return v
	}
	return extJSON(id, false)
}

// idKey is a document's _id in a lease key and in Seqs, its type told
// apart: canonical extended JSON but for an ObjectID or a string.
func idKey(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return "o:" + v.Hex()
	case string:
		return "s:" + v
	}
	return "j:" + extJSON(id, true)
}

// extJSON is id as extended JSON, canonical or relaxed; one the driver
// cannot write, as it read it, is told by its type and Go syntax.
func extJSON(id any, canonical bool) string {
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: id}}, canonical, false)
	if s, ok := strings.CutPrefix(string(b), `{"v":`); err == nil && ok {
		return strings.TrimSuffix(s, "}")
	}
	return fmt.Sprintf("%T:%#v", id, id)
}

// tenant reads the tenant field of a document, or "".
func tenant(doc bson.Raw, field string) string {
	if field == "" {
		return ""
	}
	s, _ := doc.Lookup(field).StringValueOK()
	return s
}
