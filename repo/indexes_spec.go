package repo

import (
	"bytes"
	"fmt"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
)

// indexSpec is what New compares of two indexes: the fields of a
// listIndexes entry that model.Index declares.
type indexSpec struct {
	Name           string
	key, partial   bson.RawValue
	ttl            bson.RawValue
	unique, sparse bool
}

// readSpec reads one listIndexes entry.
func readSpec(raw bson.Raw) indexSpec {
	s := indexSpec{key: raw.Lookup("key"), partial: raw.Lookup("partialFilterExpression"), ttl: raw.Lookup("expireAfterSeconds")}
	s.Name, _ = raw.Lookup("name").StringValueOK()
	s.unique = truthy(raw.Lookup("unique"))
	s.sparse = truthy(raw.Lookup("sparse"))
	return s
}

// specOf returns ix as listIndexes would list it.
func specOf(ix *model.Index) indexSpec {
	d := bson.D{{Key: "key", Value: ix.Keys}, {Key: "name", Value: ix.Name}}
	if ix.Unique {
		d = append(d, bson.E{Key: "unique", Value: true})
	}
	if ix.Sparse {
		d = append(d, bson.E{Key: "sparse", Value: true})
	}
	if ix.ExpireAfterSeconds != nil {
		d = append(d, bson.E{Key: "expireAfterSeconds", Value: *ix.ExpireAfterSeconds})
	}
	if ix.PartialFilter != nil {
		d = append(d, bson.E{Key: "partialFilterExpression", Value: ix.PartialFilter})
	}
	raw, _ := bson.Marshal(d) // keys, a name and documents already encoded: cannot fail
	return readSpec(raw)
}

// truthy reads a boolean option, which some servers list as a number.
func truthy(v bson.RawValue) bool {
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	f, ok := bsonio.Number(v)
	return ok && f != 0
}

func (s indexSpec) sameOptions(o indexSpec) bool {
	return s.unique == o.unique && s.sparse == o.sparse && equalValues(s.ttl, o.ttl) && equalValues(s.partial, o.partial)
}

// String describes an existing index as model.Index describes a declared
// one.
func (s indexSpec) String() string {
	str := s.Name + " " + valueString(s.key)
	if s.unique {
		str += " unique"
	}
	if s.sparse {
		str += " sparse"
	}
	if s.ttl.Type != 0 {
		str += " expireAfterSeconds=" + valueString(s.ttl)
	}
	if s.partial.Type != 0 {
		str += " partialFilterExpression=" + valueString(s.partial)
	}
	return str
}

func valueString(v bson.RawValue) string {
	if d, ok := v.DocumentOK(); ok {
		elems, _ := d.Elements()
		keys := make(bson.D, len(elems))
		for i, e := range elems {
			keys[i] = bson.E{Key: e.Key(), Value: e.Value()}
		}
		if v.Type == bson.TypeEmbeddedDocument && len(elems) > 0 && isKeyDoc(elems) {
			for i, e := range elems {
				keys[i].Value = valueString(e.Value())
			}
			return model.KeysString(keys)
		}
		return d.String()
	}
	if f, ok := bsonio.Number(v); ok {
		return fmt.Sprint(f)
	}
	if str, ok := v.StringValueOK(); ok {
		return str
	}
	return v.String()
}

// isKeyDoc reports whether elems look like an index's keys (numbers and
// strings), which are written as {a: 1}.
func isKeyDoc(elems []bson.RawElement) bool {
	for _, e := range elems {
		if _, ok := bsonio.Number(e.Value()); !ok && e.Value().Type != bson.TypeString {
			return false
		}
	}
	return true
}

// equalValues compares two BSON values as a server compares index specs:
// numbers by value whatever their type, documents key by key in order.
func equalValues(a, b bson.RawValue) bool {
	if fa, ok := bsonio.Number(a); ok {
		fb, ok := bsonio.Number(b)
		return ok && fa == fb
	}
	if a.Type != b.Type {
		return false
	}
	if a.Type != bson.TypeEmbeddedDocument && a.Type != bson.TypeArray {
		return bytes.Equal(a.Value, b.Value)
	}
	ea, _ := bson.Raw(a.Value).Elements()
	eb, _ := bson.Raw(b.Value).Elements()
	if len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if ea[i].Key() != eb[i].Key() || !equalValues(ea[i].Value(), eb[i].Value()) {
			return false
		}
	}
	return true
}
