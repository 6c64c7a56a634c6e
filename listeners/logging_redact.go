package listeners

import (
	"reflect"
	"strings"

	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// redactedValue replaces, in what Logging writes, the value of every
// encrypted field and blind index.
const redactedValue = "[encrypted]"

// redactedQuery replaces, in what Logging writes, the whole filter, update
// or pipeline of a model with encrypted fields.
const redactedQuery = "[redacted: the model has encrypted fields]"

// secretNames returns the BSON names whose values Logging must not show
// for model type t: its encrypted fields and their blind indexes. Logging
// runs before Encryption on Before* events and after it on AfterLoad, so
// it sees plaintext there.
func secretNames(t reflect.Type) map[string]bool {
	if t == nil {
		return nil
	}
	s, err := model.Of(t)
	if err != nil {
		return nil
	}
	enc := s.Policy("encrypt")
	if len(enc) == 0 {
		return nil
	}
	names := make(map[string]bool, 2*len(enc))
	for _, f := range enc {
		names[f.BSON] = true
		names[f.BSON+blindIndexSuffix] = true // what encryption stores beside an eq field
	}
	return names
}

// blindIndexSuffix names the key beside an encrypted field that holds its
// blind index, as package encryption writes it.
const blindIndexSuffix = "_bidx"

// redactSecrets returns v, a document, a filter, an update or a pipeline, with
// the value of every key naming one of names (or a part of it, "email.x")
// replaced, at any depth.
func redactSecrets(v any, names map[string]bool, depth int) any {
	if depth > 100 {
		return redactedValue
	}
	switch v.(type) {
	case bson.D, bson.M, map[string]any, bson.Raw:
		d, err := mql.ToD(v)
		if err != nil {
			return redactedValue
		}
		out := make(bson.D, len(d))
		for i, e := range d {
			top, _, _ := strings.Cut(e.Key, ".")
			if names[top] {
				out[i] = bson.E{Key: e.Key, Value: redactedValue}
			} else {
				out[i] = bson.E{Key: e.Key, Value: redactSecrets(e.Value, names, depth+1)}
			}
		}
		return out
	case string, []byte:
		return v
	}
	if a, err := mql.Array(v); err == nil {
		out := make(bson.A, len(a))
		for i, e := range a {
			out[i] = redactSecrets(e, names, depth+1)
		}
		return out
	}
	return v
}

// extJSON returns doc, a bson.Raw or a redacted bson.D, as relaxed
// extended JSON.
func extJSON(doc any) string {
	if raw, ok := doc.(bson.Raw); ok {
		return raw.String()
	}
	b, err := bson.MarshalExtJSON(doc, false, false)
	if err != nil {
		return redactedValue
	}
	return string(b)
}
