package repo

import (
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/bson"
)

// needFilter refuses a nil filter: untyped nil, or a nil bson.D, bson.M,
// map, slice or pointer, which is most often a filter variable left unset
// and would match every document. An empty filter, bson.D{}, says "every
// document" on purpose. Reads and writes follow the same rule (see the
// package doc).
func needFilter(filter any) error {
	isNil := false
	switch f := filter.(type) {
	case nil:
		isNil = true
	case bson.D:
		isNil = f == nil
	case bson.M:
		isNil = f == nil
	case map[string]any:
		isNil = f == nil
	case bson.Raw:
		isNil = f == nil
	default:
		switch rv := reflect.ValueOf(filter); rv.Kind() {
		case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
			isNil = rv.IsNil()
		}
	}
	if isNil {
		return fmt.Errorf("nil filter (%T); pass bson.D{} to match every document: %w", filter, ErrInvalidArgument)
	}
	return nil
}
