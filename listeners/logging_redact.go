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
	if err != nil || len(s.Encrypted) == 0 {
		return nil
	}
	names := make(map[string]bool, 2*len(s.Encrypted))
	for i := range s.Encrypted {
		f := &s.Encrypted[i]
		names[f.BSON] = true
		if f.Eq {
			names[f.BlindIndex()] = true
		}
	}
	return names
}

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
