package repo

import (
	"fmt"
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
// instead. It gives a model its ID through SetID, whatever else that
// does, and checks that the field holds it then.

var oidType = reflect.TypeFor[primitive.ObjectID]()

// probe returns a new model of s, with nil embedded struct pointers
// filled when fill, and its _id field when that is a settable
// primitive.ObjectID the new model reaches; ok is false otherwise.
func probe(s *model.Schema, fill bool) (m mgm.Model, f *model.Field, fv reflect.Value, ok bool) {
	f = s.ID
	if f == nil || f.Type != oidType {
		return nil, nil, fv, false
	}
	p := reflect.New(s.Struct)
	if fill {
		fillEmbedded(p.Elem())
	}
	fv, err := p.Elem().FieldByIndexErr(f.Index)
	if err != nil || !fv.CanSet() {
		return nil, nil, fv, false // through a nil embedded pointer, or an unexported field
	}
	m, ok = p.Interface().(mgm.Model)
	return m, f, fv, ok
}

// getsID reports whether m's GetID returns the ObjectID its field fv is
// set to, and what it returned; a GetID that panics (it needs what a new
// model lacks) returns nothing.
func getsID(m mgm.Model, fv reflect.Value) (same bool, got any) {
	defer func() { _ = recover() }()
	set := primitive.NewObjectID()
	fv.Set(reflect.ValueOf(set))
	got = m.GetID()
	id, ok := got.(primitive.ObjectID)
	return ok && id == set, got
}

// objectIDField returns s's _id field when an insert may read it in place
// of GetID and leave a zero one to the driver: the field is a settable
// primitive.ObjectID, the model's GetID returns it (checked on a new
// model, with the field zero and set), and reg leaves it out of the
// document while it is zero, so that the driver gives the document a new
// ObjectID, as mgm's Create relies on. Otherwise, and when GetID panics on
// a new model, it returns nil.
func objectIDField(s *model.Schema, reg *bsoncodec.Registry) (f *model.Field) {
	m, f, fv, ok := probe(s, false)
	if !ok {
		return nil
	}
	defer func() {
		if recover() != nil {
			f = nil // the model's encoding needs what a new model lacks
		}
	}()
	raw, err := bsonio.Marshal(reg, m)
	if err != nil {
		return nil
	}
	if _, err := raw.LookupErr("_id"); err == nil {
		return nil // a zero ID would be stored as such
	}
	if same, _ := getsID(m, fv); !same {
		return nil
	}
	return f
}

// giveID gives m the ObjectID id through its SetID, and checks that the
// model holds it then: a SetID that panics, or that has a value receiver
// and so sets a copy, is an error.
func (r *Repository[T]) giveID(m T, mv reflect.Value, id primitive.ObjectID) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v.SetID(%v) panicked: %v", r.schema.Type, id, v)
		}
	}()
	m.SetID(id)
	if !r.holdsOID(m, mv, id) {
		return fmt.Errorf("%v.SetID(%v) did not set the model's ID (a SetID with a value receiver sets a copy): %w", r.schema.Type, id, ErrInvalidArgument)
	}
	return nil
}

// holdsID reports whether m's ID is id (see holdsOID; another type of ID
// is compared with what GetID returns).
func (r *Repository[T]) holdsID(m T, mv reflect.Value, id any) bool {
	if oid, ok := id.(primitive.ObjectID); ok {
		return r.holdsOID(m, mv, oid)
	}
	return reflect.DeepEqual(m.GetID(), id)
}

// holdsOID reports whether m's ID is the ObjectID id: its field's value
// where objectIDField found the field, without copying it to the heap,
// else what GetID returns.
func (r *Repository[T]) holdsOID(m T, mv reflect.Value, id primitive.ObjectID) bool {
	if r.oid != nil {
		return r.fieldID(mv) == id
	}
	got, ok := m.GetID().(primitive.ObjectID)
	return ok && got == id
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

// idAgrees refuses a model whose GetID returns another ObjectID than the
// _id field its document stores (a struct that embeds mgm.DefaultModel
// and declares an _id field of its own): its inserts would name one ID
// and store another. A GetID that panics on a new model, with its
// embedded pointers filled, leaves nothing to compare.
func idAgrees(s *model.Schema) error {
	m, f, fv, ok := probe(s, true)
	if !ok {
		return nil
	}
	if same, got := getsID(m, fv); !same {
		if _, oid := got.(primitive.ObjectID); oid {
			return fmt.Errorf("%v stores field %s as its _id, but its GetID returns another ObjectID (from a second _id field, such as mgm.DefaultModel's, which the document does not store): %w",
				s.Type, f.Name, ErrInvalidArgument)
		}
	}
	return nil
}

// fillEmbedded gives each nil pointer to an embedded struct in v, a struct,
// a new struct, at any depth, so that promoted methods such as an embedded
// *mgm.DefaultModel's GetID can run on a new model.
func fillEmbedded(v reflect.Value) {
	for i := range v.NumField() {
		sf, fv := v.Type().Field(i), v.Field(i)
		if !sf.Anonymous || !fv.CanSet() {
			continue
		}
		switch {
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct:
			if fv.IsNil() {
				fv.Set(reflect.New(fv.Type().Elem()))
			}
			fillEmbedded(fv.Elem())
		case fv.Kind() == reflect.Struct:
			fillEmbedded(fv)
		}
	}
}

// getID returns m's GetID, turning its panic into an error.
func (r *Repository[T]) getID(m T) (id any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v.GetID panicked: %v: %w", r.schema.Type, v, ErrInvalidArgument)
		}
	}()
	return m.GetID(), nil
}
