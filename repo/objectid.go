package repo

import (
	"reflect"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// An insert looks at the model's ID to decide who gives it one, and gives
// it one. GetID returns the ID as an interface and SetID takes it as one,
// each copying an ObjectID to the heap; for the models that embed
// mgm.DefaultModel, the repository reads and writes the field instead.

var oidType = reflect.TypeFor[primitive.ObjectID]()

// objectIDField returns s's _id field when an insert may read it in place
// of GetID, write it in place of SetID, and leave a zero one to the
// driver: the field is a settable primitive.ObjectID, the model's GetID
// returns it and its SetID sets it and nothing else (checked on new
// models, with the field zero and set), and reg leaves it out of the document while it is zero,
// so that the driver gives the document a new ObjectID, as mgm's Create
// relies on. Otherwise it returns nil.
func objectIDField(s *model.Schema, reg *bsoncodec.Registry) *model.Field {
	f := s.ID
	if f == nil || f.Type != oidType {
		return nil
	}
	probe := reflect.New(s.Struct)
	fv, err := probe.Elem().FieldByIndexErr(f.Index)
	if err != nil || !fv.CanSet() {
		return nil // through a nil embedded pointer, or an unexported field
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
	if !onlySetsID(s, f, primitive.NewObjectID()) {
		return nil
	}
	return f
}

// onlySetsID reports whether SetID, on a new model of s, sets its _id
// field f to id, then back to zero, and changes nothing else in the model:
// a model whose SetID does more (keeps the ID in another field too) has
// it called.
func onlySetsID(s *model.Schema, f *model.Field, id primitive.ObjectID) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false // SetID takes no ObjectID
		}
	}()
	got, want := reflect.New(s.Struct), reflect.New(s.Struct)
	m := got.Interface().(mgm.Model)
	m.SetID(id)
	want.Elem().FieldByIndex(f.Index).Set(reflect.ValueOf(id))
	if !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
		return false
	}
	m.SetID(primitive.NilObjectID)
	return reflect.DeepEqual(got.Elem().Interface(), reflect.New(s.Struct).Elem().Interface())
}

// giveID gives m the ObjectID id: in its field where objectIDField allows,
// else through SetID.
func (r *Repository[T]) giveID(m T, mv reflect.Value, id primitive.ObjectID) {
	if r.oid == nil {
		m.SetID(id)
		return
	}
	p, _ := reflect.TypeAssert[*primitive.ObjectID](r.oid.Value(mv.Elem()).Addr())
	*p = id
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
