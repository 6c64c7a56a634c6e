package encryption

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
)

// encField is a field that Encryption stores encrypted: a
// policy:"encrypt" field, randomized and never queried, or a
// policy:"encrypt,eq" field, which also keeps a blind index beside it so
// that equality queries on it can be answered. Only top-level fields
// (inline structs flattened) can be encrypted; a field holding a struct,
// a map or a slice is encrypted as a whole.
type encField struct {
	model.Field
	Eq  bool   // a blind index is kept, in the sibling field BlindIndex
	Tag string // the field's policy tag, for errors
}

// BlindIndexSuffix is appended to a policy:"encrypt,eq" field's BSON name
// to name the sibling field that holds its blind index: "email" →
// "email_bidx".
const BlindIndexSuffix = "_bidx"

// BlindIndex returns the name of the field that holds f's blind index, or
// "" when f has none.
func (f *encField) BlindIndex() string {
	if !f.Eq {
		return ""
	}
	return f.BSON + BlindIndexSuffix
}

// fieldsOf returns the encrypted fields of the model of s, or an error
// naming the field and its tag for one that cannot be encrypted: see
// Encryption.Prepare.
func fieldsOf(s *model.Schema) ([]*encField, error) {
	var out []*encField
	for _, pf := range s.Policy("encrypt") {
		f := &encField{Field: pf.Field, Tag: pf.Tag}
		for _, opt := range pf.Options {
			if opt != "eq" {
				return nil, pf.Err(s.Type, fmt.Sprintf(`unknown option %q; want policy:"encrypt" or policy:"encrypt,eq"`, opt))
			}
			f.Eq = true
		}
		if reason := refused(s, f); reason != "" {
			return nil, fmt.Errorf("encryption: %v field %s `%s`: %s: %w", s.Type, f.Name, f.Tag, reason, ErrEncryptedField)
		}
		out = append(out, f)
	}
	for _, f := range out {
		if err := checkIndexes(s, f); err != nil {
			return nil, err
		}
		if err := checkScopes(s, f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// refused returns why f cannot be encrypted, or "".
func refused(s *model.Schema, f *encField) string {
	switch k := f.Type.Kind(); {
	case f.BSON == "_id":
		return "_id cannot be encrypted: documents are found and bound by it"
	case slices.ContainsFunc(s.Auto, func(a model.AutoField) bool { return a.BSON == f.BSON }):
		return "a field tagged auto cannot be encrypted: its listener must read or query it"
	case slices.ContainsFunc(s.Audit, func(a model.AuditField) bool { return a.BSON == f.BSON }):
		return "a field tagged audit cannot be encrypted: its listener must read or query it"
	case f.Eq && (k == reflect.Slice || k == reflect.Array) && f.Type.Elem().Kind() != reflect.Uint8:
		return `policy:"encrypt,eq" on a slice: a blind index of the whole value cannot match single elements as MongoDB does; use policy:"encrypt"`
	case f.Eq && s.FieldByBSON(f.BlindIndex()) != nil:
		return "the blind index's field " + f.BlindIndex() + " is taken by another field"
	}
	return ""
}

// checkIndexes refuses an index the model declares (model.Schema.Indexes)
// on encrypted field f, which would order ciphertexts, or on its blind
// index alone, which Encryption makes itself. The error wraps
// model.ErrInvalidIndex and names the index and what declared it.
func checkIndexes(s *model.Schema, f *encField) error {
	for i := range s.Indexes {
		ix := &s.Indexes[i]
		reason := ""
		switch {
		case slices.ContainsFunc(ix.Keys, func(k bson.E) bool { return k.Key == f.BSON }):
			reason = "field " + f.Name + " is encrypted, so an index on it orders ciphertext; policy:\"encrypt,eq\" keeps a blind index that the encryption listener indexes"
		case f.Eq && len(ix.Keys) == 1 && ix.Keys[0].Key == f.BlindIndex() && fmt.Sprint(ix.Keys[0].Value) == "1":
			reason = "the encryption listener makes the index on " + f.BlindIndex() + " itself"
		}
		if reason != "" {
			return fmt.Errorf("encryption: type %v: index %s: %s: %w", s.Type, ix, reason, model.ErrInvalidIndex)
		}
	}
	return nil
}

// checkScopes refuses an `auto:"inc,scope=..."` field scoped by encrypted
// field f: equal values are stored unequal, so they cannot scope a unique
// index. The error wraps model.ErrInvalidTag and names the auto field.
func checkScopes(s *model.Schema, f *encField) error {
	for _, a := range s.Auto {
		if slices.ContainsFunc(a.Scope, func(sc model.Field) bool { return sc.BSON == f.BSON }) {
			return &model.TagError{Type: s.Type, Field: a.Name, Tag: `auto:"` + a.Tag + `"`,
				Reason: fmt.Sprintf("scope=%s: field %s is encrypted, so equal values are stored unequal and cannot scope a unique index", f.BSON, f.Name)}
		}
	}
	return nil
}
