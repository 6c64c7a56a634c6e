package model

import "reflect"

// EncryptedField is a field with an `encrypt` tag: its value is stored
// encrypted by encryption.Encryption.
//
//	encrypt:""     randomized encryption; the field cannot be queried
//	encrypt:"eq"   randomized encryption plus a blind index, so that
//	               equality queries on the field can be answered
//
// Only top-level fields (inline structs flattened) can be encrypted; a
// field holding a struct, a map or a slice is encrypted as a whole.
type EncryptedField struct {
	Field
	// Eq asks for a blind index, kept in the sibling field BlindIndex.
	Eq bool
	// Tag is the struct tag's whole text, for listeners that check how the
	// field combines with other tags.
	Tag reflect.StructTag
}

// BlindIndexSuffix is appended to an `encrypt:"eq"` field's BSON name to
// name the sibling field that holds its blind index: "email" → "email_bidx".
const BlindIndexSuffix = "_bidx"

// BlindIndex returns the name of the field that holds f's blind index, or
// "" when f has none.
func (f *EncryptedField) BlindIndex() string {
	if !f.Eq {
		return ""
	}
	return f.BSON + BlindIndexSuffix
}

func parseEncrypt(s *Schema, f Field, sf reflect.StructField, tag string) (EncryptedField, error) {
	e := EncryptedField{Field: f, Tag: sf.Tag}
	switch tag {
	case "":
	case "eq":
		e.Eq = true
	default:
		return e, s.tagErr(f.Name, `encrypt:"`+tag+`"`, `unknown encrypt option; want encrypt:"" or encrypt:"eq"`)
	}
	return e, nil
}

// EncryptedByBSON returns the encrypted field stored under key, or nil.
func (s *Schema) EncryptedByBSON(key string) *EncryptedField {
	for i := range s.Encrypted {
		if s.Encrypted[i].BSON == key {
			return &s.Encrypted[i]
		}
	}
	return nil
}

// keepStored drops encrypted fields shadowed by a shallower field of the
// same BSON name, as check does for auto fields.
func (s *Schema) keepStored() {
	var kept []EncryptedField
	for _, e := range s.Encrypted {
		if s.has(e.Field) {
			kept = append(kept, e)
		}
	}
	s.Encrypted = kept
}
