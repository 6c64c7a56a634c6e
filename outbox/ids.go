package outbox

import (
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// subject is a document's _id as Message.Subject: hex for an ObjectID.
func subject(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return v.Hex()
	case string:
		return v
	}
	return fmt.Sprint(id)
}

// idKey is a document's _id in a lease key, its type told apart.
func idKey(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return "o:" + v.Hex()
	case string:
		return "s:" + v
	}
	return fmt.Sprintf("%T:%v", id, id)
}

// tenant reads the tenant field of a document, or "".
func tenant(doc bson.Raw, field string) string {
	if field == "" {
		return ""
	}
	s, _ := doc.Lookup(field).StringValueOK()
	return s
}
