package repo

import (
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/model"
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
			return fmt.Errorf("%v field %s `auto:\"%s\"` is zero, which is never a key: register autokeys.Keys on the repository's bus to fill it, or set it: %w",
				r.schema.Type, a.Name, a.Tag, ErrInvalidArgument)
		}
	}
	return nil
}
