package repo

import (
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
)

// A key is never stored zero. Zero is never a key (a tag's start is at
// least 1), and a document stored with one breaks the unique index, or
// collides with the next such document. It happens when no listener fills
// the keys: AutoKeys is not on the bus, or not for the model.

// zeroKey refuses m, a model about to be written, when one of its inc or
// uuid fields is zero once BeforeConvert's listeners have run.
func (r *Repository[T]) zeroKey(mv reflect.Value) error {
	v := mv.Elem()
	for i := range r.schema.Auto {
		a := &r.schema.Auto[i]
		if (a.Kind == model.Inc || a.Kind == model.UUID) && a.Value(v).IsZero() {
			return fmt.Errorf("%v field %s `auto:\"%s\"` is zero, which is never a key: register listeners.AutoKeys on the repository's bus to fill it, or set it: %w",
				r.schema.Type, a.Name, a.Tag, ErrInvalidArgument)
		}
	}
	return nil
}

// upsertKeys refuses the update of an upsert, as its listeners left it,
// when the document it may insert would lack one of the model's inc or
// uuid keys: neither the update nor the filter's equalities (which the
// repository adds to it as $setOnInsert) set it.
func (r *Repository[T]) upsertKeys(update any) error {
	var u *mql.Update
	for i := range r.schema.Auto {
		a := &r.schema.Auto[i]
		if a.Kind != model.Inc && a.Kind != model.UUID {
			continue
		}
		if u == nil {
			var err error
			if u, err = mql.ParseUpdate(update); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
			}
		}
		if !u.Touches(a.BSON) {
			return fmt.Errorf("the upsert could insert a %v without its key %s `auto:\"%s\"`: register listeners.AutoKeys on the repository's bus to fill it, or set it in the update or the filter: %w",
				r.schema.Type, a.BSON, a.Tag, ErrInvalidArgument)
		}
	}
	return nil
}
