package events

import (
	"errors"
	"reflect"
)

// ErrReadOnly is returned, wrapped in a *ListenerError, when a listener
// changes a field of the event that describes the operation (its Type, Op,
// Collection, Coll, Registry, ModelType, Upsert, Quiet, Field, Index, Sort,
// Projection or Collation). Policies decide from those fields while the
// repository acts on its own values, so a listener that rewrote them would
// make the policies after it judge another operation than the one that
// runs.
var ErrReadOnly = errors.New("events: a listener changed a read-only field of the event")

// identity is the part of an event that no listener may change.
type identity struct {
	typ                         Type
	op                          Op
	collection, field           string
	modelType                   reflect.Type
	upsert, quiet               bool
	index                       int
	sort, projection, collation any
	coll, registry              any
}

func identityOf(e *Event) identity {
	return identity{
		typ: e.Type, op: e.Op, collection: e.Collection, field: e.Field, modelType: e.ModelType,
		upsert: e.Upsert, quiet: e.Quiet, index: e.Index,
		sort: e.Sort, projection: e.Projection, collation: e.Collation, coll: e.Coll, registry: e.Registry,
	}
}

// changed returns the name of the first read-only field of e that differs
// from id, or "".
func (id *identity) changed(e *Event) string {
	switch {
	case e.Type != id.typ:
		return "Type"
	case e.Op != id.op:
		return "Op"
	case e.Collection != id.collection:
		return "Collection"
	case e.Field != id.field:
		return "Field"
	case e.ModelType != id.modelType:
		return "ModelType"
	case e.Upsert != id.upsert:
		return "Upsert"
	case e.Quiet != id.quiet:
		return "Quiet"
	case e.Index != id.index:
		return "Index"
	case !same(e.Sort, id.sort):
		return "Sort"
	case !same(e.Projection, id.projection):
		return "Projection"
	case !same(e.Collation, id.collation):
		return "Collation"
	case !same(e.Coll, id.coll):
		return "Coll"
	case !same(e.Registry, id.registry):
		return "Registry"
	}
	return ""
}

// same reports whether a and b hold the same value: equal when their type
// is comparable, and otherwise (maps, slices, funcs) the same object.
func same(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	switch {
	case !va.IsValid() || !vb.IsValid():
		return va.IsValid() == vb.IsValid()
	case va.Type() != vb.Type():
		return false
	}
	switch va.Kind() {
	case reflect.Map, reflect.Func, reflect.Chan, reflect.Pointer, reflect.UnsafePointer:
		return va.UnsafePointer() == vb.UnsafePointer()
	case reflect.Slice:
		return va.Len() == vb.Len() && (va.Len() == 0 || va.UnsafePointer() == vb.UnsafePointer())
	}
	return va.Comparable() && va.Equal(vb)
}
