package encryption

import (
	"slices"

	"go.mongodb.org/mongo-driver/bson"
)

// keyIn returns the first of names that is a key anywhere in doc, the
// BSON a query will send.
func keyIn(doc bson.Raw, names []string, depth int) string {
	if depth > 100 {
		return "(nesting deeper than 100)"
	}
	elems, err := doc.Elements()
	if err != nil {
		return "(unreadable BSON)"
	}
	for _, el := range elems {
		if slices.Contains(names, el.Key()) {
			return el.Key()
		}
		v := el.Value()
		var sub bson.Raw
		switch v.Type {
		case bson.TypeEmbeddedDocument:
			sub = v.Document()
		case bson.TypeArray:
			sub = bson.Raw(v.Array())
		default:
			continue
		}
		if k := keyIn(sub, names, depth+1); k != "" {
			return k
		}
	}
	return ""
}
