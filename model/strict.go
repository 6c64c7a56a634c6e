package model

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
)

// The driver's struct codec decodes a key it does not know into the field
// whose name is the key in lower case: {"Tenant": "globex"} decodes into
// the field stored as "tenant". The policies and the key rules compare
// field paths exactly, so a write of "Tenant" would pass them and then
// read back as the tenant. The driver cannot be told not to fold (its
// StructCodec has no such option), so the registry's struct decoder hands
// the struct codec a reader that leaves out every key that matches a
// field only in another letter case: such a key is ignored, as any key of
// no field is, and the field keeps what its exact key holds.

// RegisterStrict makes r decode structs strictly: a key that matches a
// field's BSON name only case-insensitively is skipped rather than decoded
// into the field. Registry does it; call it on a registry given to
// repo.WithRegistry that is not built from Registry, before anything
// decodes with r (r caches the decoder of each type it has decoded). It
// fails when r is nil or has no decoder for structs to wrap.
func RegisterStrict(r *bsoncodec.Registry) error {
	if r == nil {
		return errors.New("model: RegisterStrict: nil registry")
	}
	next, err := r.LookupDecoder(reflect.TypeFor[struct{}]())
	if err != nil {
		return fmt.Errorf("model: RegisterStrict: the registry has no struct decoder to make strict: %w", err)
	}
	if _, ok := next.(strictDecoder); ok {
		return nil
	}
	r.RegisterKindDecoder(reflect.Struct, strictDecoder{next})
	return nil
}

// DecodesStrictly reports whether r decodes the struct type st strictly,
// with the decoder RegisterStrict registers. It is false for a registry
// RegisterStrict was not called on, for one that has st's decoder cached
// from before the call, and for st with a decoder of its own. Like a
// decode, it makes r cache st's decoder: call it once r is complete.
func DecodesStrictly(r *bsoncodec.Registry, st reflect.Type) bool {
	if r == nil || st == nil || st.Kind() != reflect.Struct {
		return false
	}
	dec, err := r.LookupDecoder(st)
	if err != nil {
		return false
	}
	_, ok := dec.(strictDecoder)
	return ok
}

// strictDecoder decodes a struct with next, the registry's struct codec,
// through a reader that drops the case-folded keys of the struct's fields.
type strictDecoder struct{ next bsoncodec.ValueDecoder }

// DecodeValue decodes the document vr reads into v, a struct.
func (d strictDecoder) DecodeValue(dc bsoncodec.DecodeContext, vr bsonrw.ValueReader, v reflect.Value) error {
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return d.next.DecodeValue(dc, vr, v)
	}
	names := fieldNames(v.Type())
	if len(names) == 0 {
		return d.next.DecodeValue(dc, vr, v)
	}
	r := strictReaders.Get().(*strictReader)
	r.ValueReader, r.names = vr, names
	err := d.next.DecodeValue(dc, r, v)
	*r = strictReader{} // holds nothing of this decode
	strictReaders.Put(r)
	return err
}

// strictReaders holds the readers of finished decodes, so that decoding a
// document allocates none.
var strictReaders = sync.Pool{New: func() any { return new(strictReader) }}

// strictReader is a value reader whose document reader skips the keys
// that match a name in names only case-insensitively. It is both the
// value reader and the document reader, and comes from strictReaders.
type strictReader struct {
	bsonrw.ValueReader
	dr    bsonrw.DocumentReader
	names map[string]bool
}

// ReadDocument starts reading the document, returning r itself.
func (r *strictReader) ReadDocument() (bsonrw.DocumentReader, error) {
	dr, err := r.ValueReader.ReadDocument()
	if err != nil {
		return nil, err
	}
	r.dr = dr
	return r, nil
}

// ReadElement returns the next element whose key is not a case-folded
// field name, skipping those that are.
func (r *strictReader) ReadElement() (string, bsonrw.ValueReader, error) {
	for {
		name, vr, err := r.dr.ReadElement()
		if err != nil || !r.folded(name) {
			return name, vr, err
		}
		if err := vr.Skip(); err != nil {
			return "", nil, err
		}
	}
}

// folded reports whether name is not a field's name but its lower case
// is, the fallback the struct codec would take.
func (r *strictReader) folded(name string) bool {
	if r.names[name] {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' || c >= 0x80 {
			return r.names[strings.ToLower(name)]
		}
	}
	return false
}

var namesCache sync.Map // reflect.Type -> map[string]bool

// fieldNames returns the BSON names of st's fields as the driver's struct
// codec names them (see bsonTag), inline structs flattened.
func fieldNames(st reflect.Type) map[string]bool {
	if n, ok := namesCache.Load(st); ok {
		return n.(map[string]bool)
	}
	names := map[string]bool{}
	addNames(names, st, map[reflect.Type]bool{})
	n, _ := namesCache.LoadOrStore(st, names)
	return n.(map[string]bool)
}

func addNames(names map[string]bool, st reflect.Type, seen map[reflect.Type]bool) {
	if seen[st] {
		return
	}
	seen[st] = true
	for i := range st.NumField() {
		sf := st.Field(i)
		if sf.PkgPath != "" {
			continue
		}
		tags := bsonTag(sf)
		if tags.skip {
			continue
		}
		if tags.inline {
			t := sf.Type
			if t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if t.Kind() == reflect.Struct {
				addNames(names, t, seen)
			}
			continue
		}
		names[tags.name] = true
	}
}
