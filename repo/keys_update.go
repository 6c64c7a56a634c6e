package repo

import (
	"fmt"
	"math/big"

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
			return fmt.Errorf("the upsert could insert a %v without its key %s `auto:\"%s\"`: register autokeys.Keys on the repository's bus to fill it, or set it in the update or the filter: %w",
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
			case exact && op.Key == "$setOnInsert" && a.Kind != model.Version:
				if err := r.refuseKeyValue(a, f.Value, fmt.Sprintf("$setOnInsert of %s: %v", f.Key, f.Value)); err != nil {
					return err
				}
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
		if !one.Touches(a.BSON) || r.addedStage(st, a) {
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
func (r *Repository[T]) addedStage(st bson.D, a *model.AutoField) bool {
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
		return args[0] == path && ok && r.refuseKeyValue(a, v, "the pipeline's $literal") == nil
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

// zeroRaw reports whether v, a key as encoded, is zero as stored: null,
// a zero number (-0 and decimal zeros too), an empty string, a binary of
// zeros (the nil UUID).
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

// refuseKeyEqualities refuses an upsert whose final filter has an
// equality that would give the new document a key the rule refuses (zero,
// of another type than the field's, too large for its counter) or that
// names the version, which the repository gives a new document itself.
func (r *Repository[T]) refuseKeyEqualities(filter any) error {
	var eqs bson.D
	read := false
	for i := range r.schema.Auto {
		a := &r.schema.Auto[i]
		if !read {
			var err error
			if eqs, err = mql.Equalities(filter); err != nil {
				return fmt.Errorf("upsert filter: %w", err)
			}
			read = true
		}
		for _, eq := range eqs {
			if !mql.PathsOverlap(eq.Key, a.BSON) {
				continue
			}
			if a.Kind == model.Version {
				return fmt.Errorf("%v field %s `auto:\"%s\"`: the upsert's filter has the equality %s: %v, which would choose the new document's version: an upsert's filter never names the version: %w",
					r.schema.Type, a.BSON, a.Tag, eq.Key, eq.Value, ErrInvalidArgument)
			}
			if eq.Key == a.BSON {
				if err := r.refuseKeyValue(a, eq.Value, fmt.Sprintf("the upsert's filter equality %s: %v", eq.Key, eq.Value)); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("%v field %s `auto:\"%s\"`: the upsert's filter has the equality %s: %v, which would give the new document part of that key: an upsert's filter equality on a key names the whole key: %w",
				r.schema.Type, a.BSON, a.Tag, eq.Key, eq.Value, ErrInvalidArgument)
		}
	}
	return nil
}
