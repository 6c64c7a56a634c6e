package repo

import (
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
)

// checkStrict refuses reg, a registry given with WithRegistry, when it
// does not decode s's struct strictly (model.DecodesStrictly): the driver's
// struct codec decodes a stored "Tenant" into the field stored as
// "tenant", which the policies, comparing paths exactly, never see written.
func checkStrict(reg *bsoncodec.Registry, s *model.Schema) error {
	if model.DecodesStrictly(reg, s.Struct) {
		return nil
	}
	return fmt.Errorf("repo.New[%v]: WithRegistry: the registry does not decode %v strictly, so a key such as \"Region\" would decode into the field stored as \"region\"; build it from model.Registry() or call model.RegisterStrict on it before any decoding (and give %v no decoder of its own): %w",
		s.Type, s.Struct, s.Struct, ErrInvalidArgument)
}

// checkNames refuses reg when it encodes s's struct under other keys than
// the schema names its fields (a struct tag parser that reads json tags,
// say): the policies find a field by the name the schema gives it, so a
// field encoded under another would be written unconfined, unencrypted.
// It encodes a model whose string, number and bool fields are set, and
// refuses a key the schema does not name, or a set field missing.
func checkNames(reg *bsoncodec.Registry, s *model.Schema) error {
	probe := reflect.New(s.Struct)
	var set []string
	for i := range s.Fields {
		f := &s.Fields[i]
		fv, err := probe.Elem().FieldByIndexErr(f.Index)
		if err != nil || !fv.CanSet() {
			continue
		}
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("x")
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fv.SetInt(1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			fv.SetUint(1)
		case reflect.Float32, reflect.Float64:
			fv.SetFloat(1)
		case reflect.Bool:
			fv.SetBool(true)
		default:
			continue
		}
		set = append(set, f.BSON)
	}
	raw, err := bsonio.Marshal(reg, probe.Interface())
	if err != nil {
		return nil // what the registry cannot encode fails at the first write, naming it
	}
	elems, err := raw.Elements()
	if err != nil {
		return nil
	}
	keys := map[string]bool{}
	for _, el := range elems {
		keys[el.Key()] = true
		if s.FieldByBSON(el.Key()) == nil {
			return fmt.Errorf("repo.New[%v]: WithRegistry: the registry encodes %v with a key %q that no field of it is stored as by its bson tags; the policies find fields by those names, so give the registry the driver's default struct tag parser: %w",
				s.Type, s.Struct, el.Key(), ErrInvalidArgument)
		}
	}
	for _, name := range set {
		if !keys[name] {
			return fmt.Errorf("repo.New[%v]: WithRegistry: the registry does not encode field %q of %v under that name; the policies find fields by it, so give the registry the driver's default struct tag parser: %w",
				s.Type, name, s.Struct, ErrInvalidArgument)
		}
	}
	return nil
}
