package model

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// A repository encodes a model once, for its listeners, and hands the
// driver that bson.Raw, which the driver copies into its message. The
// driver's own encoder for bson.Raw copies a document element by element
// and allocates a string for every key; rawEncoder writes the same bytes
// with the keys taken from a table of keys already seen, so that the copy
// allocates nothing but the growth of the driver's buffer.

var rawType = reflect.TypeFor[bson.Raw]()

// bytesWriter is a value writer that takes a value's encoding as it is, as
// the driver's BSON value writer does.
type bytesWriter interface {
	WriteValueBytes(t bsontype.Type, b []byte) error
}

// rawEncoder encodes bson.Raw; next is the registry's encoder it replaces,
// for what it does not handle (a document that is not valid BSON, a value
// writer that takes no bytes), so that those get the driver's behaviour and
// errors.
type rawEncoder struct{ next bsoncodec.ValueEncoder }

func registerRaw(r *bsoncodec.Registry) {
	next, err := r.LookupEncoder(rawType)
	if err != nil {
		return // the registry has no encoder to improve on
	}
	r.RegisterTypeEncoder(rawType, rawEncoder{next})
}

// EncodeValue writes the document v holds.
func (re rawEncoder) EncodeValue(ec bsoncodec.EncodeContext, vw bsonrw.ValueWriter, v reflect.Value) error {
	raw, ok := reflect.TypeAssert[bson.Raw](v)
	if _, isBytes := vw.(bytesWriter); !ok || !isBytes || bsoncore.Document(raw).Validate() != nil {
		return re.next.EncodeValue(ec, vw, v)
	}
	dw, err := vw.WriteDocument()
	if err != nil {
		return err
	}
	length, rem, _ := bsoncore.ReadLength(raw) // checked by Validate
	rem = rem[:length-5]
	for len(rem) > 0 {
		var el bsoncore.Element
		el, rem, _ = bsoncore.ReadElement(rem)
		evw, err := dw.WriteDocumentElement(rawKey(el.KeyBytes()))
		if err != nil {
			return err
		}
		val := el.Value()
		ebw, ok := evw.(bytesWriter)
		if !ok {
			return fmt.Errorf("model: encoding bson.Raw: the value writer of element %q takes no bytes", el.Key())
		}
		if err := ebw.WriteValueBytes(val.Type, val.Data); err != nil {
			return err
		}
	}
	return dw.WriteDocumentEnd()
}

// rawKeys maps the keys rawEncoder has met to themselves, so that a key
// costs a lookup instead of an allocation. Reads take no lock: writers
// replace the map. It stops growing at maxRawKeys keys, and takes none
// longer than maxRawKey bytes, so documents with keys that never repeat
// cannot make it grow without end.
var rawKeys struct {
	m  atomic.Pointer[map[string]string]
	mu sync.Mutex // serialises writers
}

const (
	maxRawKeys = 1024
	maxRawKey  = 64
)

// rawKey returns key as a string, without allocating when it was met
// before.
func rawKey(key []byte) string {
	if m := rawKeys.m.Load(); m != nil {
		if k, ok := (*m)[string(key)]; ok {
			return k
		}
	}
	k := string(key)
	if len(k) > maxRawKey {
		return k
	}
	rawKeys.mu.Lock()
	defer rawKeys.mu.Unlock()
	old := rawKeys.m.Load()
	if old != nil && len(*old) >= maxRawKeys {
		return k
	}
	m := make(map[string]string, 1+lenOf(old))
	if old != nil {
		for kk := range *old {
			m[kk] = kk
		}
	}
	m[k] = k
	rawKeys.m.Store(&m)
	return k
}

func lenOf(m *map[string]string) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
