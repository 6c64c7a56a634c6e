package model

import (
	"reflect"
	"slices"
)

// FieldTag is one key:"value" pair of a field's struct tag whose key
// package model does not read itself (see Schema.OtherTags).
type FieldTag struct {
	// Field is the Go field name.
	Field string
	// Key is the pair's key, such as "json".
	Key string
	// Tag is the pair as written, key:"value", for errors.
	Tag string
}

// ownTags are the struct-tag keys Schema reads.
var ownTags = append([]string{"bson", "policy"}, metaTags...)

// recordTags appends to s.OtherTags the pairs of sf's tag whose key
// Schema does not read, in the tag's order.
func (s *Schema) recordTags(sf reflect.StructField) {
	for _, p := range tagPairs(sf.Tag) {
		if !slices.Contains(ownTags, p.key) {
			s.OtherTags = append(s.OtherTags, FieldTag{Field: sf.Name, Key: p.key, Tag: p.key + ":" + p.quoted})
		}
	}
}
