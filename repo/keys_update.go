package repo

import (
	"fmt"
	"math/big"
	"reflect"

	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// An operator update never changes a stored document's keys (auto:"inc",
// auto:"uuid") or its version (auto:"version"), and never stores a key
// zero. The caller's update may write such a field only as an upsert's
// $setOnInsert of a non-zero key, which gives a new document its key; an
// upsert's filter equality on a key must not be zero either. The update
// as the listeners and the repository leave it, the one that is sent, is
// checked: besides such keys it may hold only the version's increment by
// 1 that the repository adds (in an update pipeline, the stages
// mql.Update.Add makes for these). The rule holds with events on or off,
// whichever listeners are registered.

// hasAutoFields reports whether the model has keys or a version.
func (r *Repository[T]) hasAutoFields() bool { return len(r.schema.Auto) > 0 }

// refuseKeyWrites refuses update, as it is to be sent, when it writes an
// auto field in a way the rule above does not allow, or when, for an
// upsert, it does not give the new document every key.
func (r *Repository[T]) refuseKeyWrites(update any, upsert bool) error {
	if !r.hasAutoFields() {
		return nil
	}
	u, err := mql.ParseUpdate(update)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	for i := range r.schema.Auto {
		a := &r.schema.Auto[i]
		if err := r.keyWritesOf(u, a); err != nil {
			return err
		}
		if upsert && a.Kind != model.Version && !u.Touches(a.BSON) {
			return fmt.Errorf("the upsert could insert a %v without its key %s `auto:\"%s\"`: register listeners.AutoKeys on the repository's bus to fill it, or set it in the update or the filter: %w",
				r.schema.Type, a.BSON, a.Tag, ErrInvalidArgument)
		}
	}
	return nil
}

// keyWritesOf refuses what u writes of auto field a, but for what the
// rule allows.
func (r *Repository[T]) keyWritesOf(u *mql.Update, a *model.AutoField) error {
	for _, op := range u.Operators() {
		fields, err := mql.ToD(op.Value)
		if err != nil {
			return fmt.Errorf("%v field %s `auto:\"%s\"`: the update has an unreadable %s: %w: %w", r.schema.Type, a.BSON, a.Tag, op.Key, ErrInvalidArgument, err)
		}
		for _, f := range fields {
			to, renamed := mql.RenameTarget(f.Value)
			if !mql.PathsOverlap(f.Key, a.BSON) && (op.Key != "$rename" || !renamed || !mql.PathsOverlap(to, a.BSON)) {
				continue
			}
			exact := f.Key == a.BSON && op.Key != "$rename"
			switch {
			case exact && op.Key == "$setOnInsert" && a.Kind != model.Version && !zeroValue(f.Value):
				continue // a new document's key
			case exact && op.Key == "$inc" && a.Kind == model.Version && isOne(f.Value):
				continue // the repository's increment
			}
			return r.keyWriteError(a, op.Key+" of "+f.Key)
		}
	}
	for i, st := range u.Stages() {
		one, err := mql.ParseUpdate([]bson.D{st})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
		}
		if !one.Touches(a.BSON) || addedStage(st, a) {
			continue
		}
		return r.keyWriteError(a, fmt.Sprintf("pipeline stage %d", i))
	}
	return nil
}

func (r *Repository[T]) keyWriteError(a *model.AutoField, what string) error {
	if a.Kind == model.Version {
		return fmt.Errorf("%v field %s `auto:\"%s\"`: the update writes it (%s): an operator update never changes the version, which the repository increments itself: %w",
			r.schema.Type, a.BSON, a.Tag, what, ErrInvalidArgument)
	}
	return fmt.Errorf("%v field %s `auto:\"%s\"`: the update writes it (%s): an operator update never changes or removes a key, and never stores one zero; an upsert may give its new document a non-zero key with $setOnInsert or a filter equality: %w",
		r.schema.Type, a.BSON, a.Tag, what, ErrInvalidArgument)
}

// addedStage reports whether st, a stage of an update pipeline, is one
// that mql.Update.Add makes for auto field a and the rule allows: the
// $setOnInsert of a non-zero key, or the version's $inc by 1.
func addedStage(st bson.D, a *model.AutoField) bool {
	if len(st) != 1 || st[0].Key != "$set" {
		return false
	}
	set, err := mql.ToD(st[0].Value)
	if err != nil || len(set) != 1 || set[0].Key != a.BSON {
		return false
	}
	expr, err := mql.ToD(set[0].Value)
	if err != nil || len(expr) != 1 {
		return false
	}
	args, err := mql.Array(expr[0].Value)
	if err != nil || len(args) != 2 {
		return false
	}
	path := "$" + a.BSON
	switch {
	case a.Kind != model.Version && expr[0].Key == "$ifNull":
		v, ok := literal(args[1])
		return args[0] == path && ok && !zeroValue(v)
	case a.Kind == model.Version && expr[0].Key == "$add":
		v, ok := literal(args[1])
		inner, err := mql.ToD(args[0])
		if err != nil || len(inner) != 1 || inner[0].Key != "$ifNull" || !ok || !isOne(v) {
			return false
		}
		base, err := mql.Array(inner[0].Value)
		return err == nil && len(base) == 2 && base[0] == path && isZeroInt(base[1])
	}
	return false
}

// literal returns the value of {$literal: v}.
func literal(x any) (any, bool) {
	d, err := mql.ToD(x)
	if err != nil || len(d) != 1 || d[0].Key != "$literal" {
		return nil, false
	}
	return d[0].Value, true
}

func isZeroInt(v any) bool { return v == any(0) }

// isOne reports whether v is the number 1.
func isOne(v any) bool {
	switch t := v.(type) {
	case int:
		return t == 1
	case int32:
		return t == 1
	case int64:
		return t == 1
	case float64:
		return t == 1
	case bson.RawValue:
		i, ok := t.AsInt64OK()
		return ok && i == 1 && (t.Type != bson.TypeDouble || t.Double() == 1)
	}
	return false
}

// zeroValue reports whether v, a key's value in an update or a filter,
// is zero as stored: null, a zero number (-0 and decimal zeros too), an
// empty string, a binary or byte array of zeros (the nil UUID), or the
// zero value of its Go type.
func zeroValue(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bson.RawValue:
		return zeroRaw(t)
	case primitive.Decimal128:
		return zeroDecimal(t)
	case primitive.Binary:
		return zeroBytes(t.Data)
	case []byte:
		return zeroBytes(t)
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return true
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			for i := range rv.Len() {
				if rv.Index(i).Uint() != 0 {
					return false
				}
			}
			return true
		}
	}
	return rv.IsZero()
}

func zeroRaw(v bson.RawValue) bool {
	switch v.Type {
	case bson.TypeNull, bson.TypeUndefined:
		return true
	case bson.TypeInt32, bson.TypeInt64:
		return v.AsInt64() == 0
	case bson.TypeDouble:
		return v.Double() == 0
	case bson.TypeString:
		return v.StringValue() == ""
	case bson.TypeBinary:
		_, data := v.Binary()
		return zeroBytes(data)
	case bson.TypeDecimal128:
		return zeroDecimal(v.Decimal128())
	}
	return false
}

func zeroDecimal(d primitive.Decimal128) bool {
	b, _, err := d.BigInt()
	return err == nil && b.Cmp(big.NewInt(0)) == 0
}

func zeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// refuseZeroKeyEqualities refuses an upsert whose final filter has an
// equality that sets a key of the new document to zero.
func (r *Repository[T]) refuseZeroKeyEqualities(filter any) error {
	var eqs bson.D
	read := false
	for i := range r.schema.Auto {
		a := &r.schema.Auto[i]
		if a.Kind != model.Inc && a.Kind != model.UUID {
			continue
		}
		if !read {
			var err error
			if eqs, err = mql.Equalities(filter); err != nil {
				return fmt.Errorf("upsert filter: %w", err)
			}
			read = true
		}
		for _, eq := range eqs {
			if mql.PathsOverlap(eq.Key, a.BSON) && (eq.Key != a.BSON || zeroValue(eq.Value)) {
				return fmt.Errorf("%v field %s `auto:\"%s\"`: the upsert's filter has the equality %s: %v, which would give the new document that key: a key is never zero: %w",
					r.schema.Type, a.BSON, a.Tag, eq.Key, eq.Value, ErrInvalidArgument)
			}
		}
	}
	return nil
}
