package repo

import (
	"reflect"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// An insert looks at the model's ID to decide who gives it one. GetID
// returns it as an interface, which copies an ObjectID to the heap; for
// the models that embed mgm.DefaultModel, the repository reads the field
// instead.

var oidType = reflect.TypeFor[primitive.ObjectID]()

// objectIDField returns s's _id field when an insert may read it in place
// of GetID and leave a zero one to the driver: the field is a
// primitive.ObjectID, the model's GetID returns it (checked on a new
// model, with the field zero and set), and reg leaves it out of the
// document while it is zero, so that the driver gives the document a new
// ObjectID, as mgm's Create relies on. Otherwise it returns nil.
func objectIDField(s *model.Schema, reg *bsoncodec.Registry) *model.Field {
	f := s.ID
	if f == nil || f.Type != oidType {
		return nil
	}
	probe := reflect.New(s.Struct)
	fv, err := probe.Elem().FieldByIndexErr(f.Index)
	if err != nil {
		return nil // through a nil embedded pointer
	}
	m, ok := probe.Interface().(mgm.Model)
	if !ok {
		return nil
	}
	if id, ok := m.GetID().(primitive.ObjectID); !ok || !id.IsZero() {
		return nil
	}
	raw, err := bsonio.Marshal(reg, m)
	if err != nil {
		return nil
	}
	if _, err := raw.LookupErr("_id"); err == nil {
		return nil // a zero ID would be stored as such
	}
	set := primitive.NewObjectID()
	fv.Set(reflect.ValueOf(set))
	if id, ok := m.GetID().(primitive.ObjectID); !ok || id != set {
		return nil
	}
	return f
}

// zeroObjectID reports whether m's ID is a zero ObjectID, and whether the
// driver may be left to give it one (see objectIDField).
func (r *Repository[T]) zeroObjectID(m T, mv reflect.Value) (zero, toDriver bool) {
	if r.oid != nil {
		return r.fieldID(mv).IsZero(), true
	}
	id, ok := m.GetID().(primitive.ObjectID)
	return ok && id.IsZero(), false
}

// noID reports whether m has no ID (see isZeroID).
func (r *Repository[T]) noID(m T, mv reflect.Value) bool {
	if r.oid != nil {
		return r.fieldID(mv).IsZero()
	}
	return isZeroID(m.GetID())
}

// fieldID returns the model's ID, read from the field r.oid.
func (r *Repository[T]) fieldID(mv reflect.Value) primitive.ObjectID {
	id, _ := reflect.TypeAssert[primitive.ObjectID](r.oid.Value(mv.Elem()))
	return id
}
