package model

import (
	"fmt"
	"reflect"
	"slices"

	"go.mongodb.org/mongo-driver/bson/primitive"
)

// objectIDType is the driver's ObjectID, a scope field's type.
var objectIDType = reflect.TypeFor[primitive.ObjectID]()

// resolveScope finds the fields a's scope= names, and refuses a name no
// field is stored under, a field of a type a scope cannot be, and a key,
// which is filled after the scope is read. (A policy whose fields cannot
// scope a number, because it stores them changed, refuses that itself.)
func (s *Schema) resolveScope(a *AutoField) error {
	a.Scope = nil
	for _, name := range a.scopeNames {
		f := s.FieldByBSON(name)
		reason := ""
		switch {
		case f == nil:
			reason = fmt.Sprintf("scope=%s: the model has no field stored as %q (scope names BSON fields)", name, name)
		case f.BSON == a.BSON:
			reason = fmt.Sprintf("scope=%s: a field cannot scope itself", name)
		case !scopeType(f.Type):
			reason = fmt.Sprintf("scope=%s: field %s is a %v; a scope field is a string, an integer, a primitive.ObjectID or a uuid.UUID", name, f.Name, f.Type)
		case s.isAuto(f.BSON):
			reason = fmt.Sprintf("scope=%s: field %s has an auto tag; a scope field is set by the caller before the insert", name, f.Name)
		}
		if reason != "" {
			return s.tagErr(a.Name, `auto:"`+a.Tag+`"`, reason)
		}
		a.Scope = append(a.Scope, *f)
	}
	return nil
}

func scopeType(t reflect.Type) bool {
	if t == uuidType || t == objectIDType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func (s *Schema) isAuto(bson string) bool {
	return slices.ContainsFunc(s.Auto, func(a AutoField) bool { return a.BSON == bson })
}

// sameScope reports whether a and b are scoped alike.
func sameScope(a, b *AutoField) bool {
	return slices.Equal(a.scopeNames, b.scopeNames)
}
