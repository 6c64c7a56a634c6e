package model

import (
	"fmt"
	"reflect"
)

// Key is one top-level key of a struct's BSON document, as KeysOf
// returns it: the Go field and the key.
type Key struct {
	Name string // Go field name, as a path through inline structs ("Base.Title")
	BSON string // key in the BSON document
}

// KeysOf returns the top-level keys of the documents that struct type st
// decodes from, by the driver's rules (a bson tag's first element, else
// the field's name in lower case; "-" skips the field; inline structs are
// flattened, the shallower of two fields of one key winning). all reports
// an inline map, which takes every key no field names: a struct with one
// decodes from the whole document. It is for types other than models,
// such as the DTOs a repository reads into; a model's keys are its
// Schema's Fields.
func KeysOf(st reflect.Type) (keys []Key, all bool, err error) {
	if st == nil || st.Kind() != reflect.Struct {
		return nil, false, fmt.Errorf("model: KeysOf(%v): want a struct type: %w", st, ErrUnsupportedType)
	}
	depth := map[string]int{}
	var walk func(st reflect.Type, prefix string, d int, seen map[reflect.Type]bool)
	walk = func(st reflect.Type, prefix string, d int, seen map[reflect.Type]bool) {
		if seen[st] {
			return
		}
		seen[st] = true
		defer delete(seen, st)
		for i := range st.NumField() {
			sf := st.Field(i)
			if !sf.IsExported() && !sf.Anonymous {
				continue
			}
			tags := bsonTag(sf)
			switch {
			case tags.skip:
				continue
			case tags.inline && sf.Type.Kind() == reflect.Map:
				all = true
				continue
			case tags.inline && sf.Type.Kind() == reflect.Struct:
				walk(sf.Type, prefix+sf.Name+".", d+1, seen)
				continue
			case !sf.IsExported():
				continue
			}
			if prev, ok := depth[tags.name]; ok && prev <= d {
				continue
			}
			depth[tags.name] = d
			keys = append(removeKey(keys, tags.name), Key{Name: prefix + sf.Name, BSON: tags.name})
		}
	}
	walk(st, "", 0, map[reflect.Type]bool{})
	return keys, all, nil
}

func removeKey(keys []Key, bson string) []Key {
	for i, k := range keys {
		if k.BSON == bson {
			return append(keys[:i], keys[i+1:]...)
		}
	}
	return keys
}
