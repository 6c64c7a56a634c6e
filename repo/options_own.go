package repo

import (
	"reflect"

	"go.mongodb.org/mongo-driver/bson"
)

// ownOptions returns the repository's own copy of the caller's option
// structs, which it checks, describes to listeners and sends, so that
// nothing that changes the caller's structs, or what they point to, after
// the repository read them (a listener, a goroutine of the caller) changes
// what is sent. Each struct is copied, nil ones stay nil, in order, so the
// driver merges the copies as it would the originals. A field that points
// to a value (Upsert, Collation, ...) gets a copy of that value; documents
// (Sort, Projection, Hint, Let, Custom, ...) of the bson types are copied
// deeply. It returns opts itself when there are none, allocating nothing.
func ownOptions[O any](opts []*O) []*O {
	if len(opts) == 0 {
		return opts
	}
	own := make([]*O, len(opts))
	for i, o := range opts {
		if o == nil {
			continue
		}
		c := new(O)
		src, dst := reflect.ValueOf(o).Elem(), reflect.ValueOf(c).Elem()
		for j := range src.NumField() {
			f := src.Field(j)
			if f.IsZero() || !dst.Field(j).CanSet() {
				continue
			}
			dst.Field(j).Set(ownField(f))
		}
		own[i] = c
	}
	return own
}

// ownField returns a copy of f, an option struct's field, as ownOptions
// describes.
func ownField(f reflect.Value) reflect.Value {
	switch f.Kind() {
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		p.Elem().Set(f.Elem())
		return p
	case reflect.Interface, reflect.Map, reflect.Slice:
		v := reflect.New(f.Type()).Elem()
		if c := cloneDoc(f.Interface()); c != nil {
			v.Set(reflect.ValueOf(c))
		}
		return v
	}
	return f
}

// cloneDoc returns a deep copy of v when it is a document or an array of
// the bson types, or of maps and slices of any; anything else as it is.
func cloneDoc(v any) any {
	switch d := v.(type) {
	case bson.D:
		c := make(bson.D, len(d))
		for i, e := range d {
			c[i] = bson.E{Key: e.Key, Value: cloneDoc(e.Value)}
		}
		return c
	case bson.M:
		return cloneMap(d)
	case map[string]any:
		return cloneMap(d)
	case bson.A:
		return cloneArray(d)
	case []any:
		return cloneArray(d)
	case []bson.D:
		c := make([]bson.D, len(d))
		for i, x := range d {
			c[i] = cloneDoc(x).(bson.D)
		}
		return c
	}
	return v
}

// cloneMap returns a deep copy of document d (see cloneDoc), of d's type.
func cloneMap[M ~map[string]any](d M) M {
	c := make(M, len(d))
	for k, x := range d {
		c[k] = cloneDoc(x)
	}
	return c
}

// cloneArray returns a deep copy of array d (see cloneDoc), of d's type.
func cloneArray[A ~[]any](d A) A {
	c := make(A, len(d))
	for i, x := range d {
		c[i] = cloneDoc(x)
	}
	return c
}
