package autokeys

import (
	"context"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/sequence"
	"go.mongodb.org/mongo-driver/bson"
)

// A numeric inc key the caller sets is kept, and the counter is moved past
// the data's largest key (at a type's first write to a collection, on a
// duplicate key). A key at the very top of the field's range would leave
// the counter no block after it: every later insert would fail. So a key
// the caller gives is refused above topKey, unless the counter has already
// handed it out (a stored model saved again). The top quarter of the
// range is left to the counter: a sequence's block grows to a quarter of
// MaxInt64 at most.

// plainRegistry encodes an upsert's key for an event that carries no
// registry: a number encodes alike in every registry.
var plainRegistry = bson.NewRegistry()

// topKey returns the largest inc key a caller may give field f.
func topKey(f *fieldPlan) uint64 { return f.Max - f.Max/4 }

// refuseTopKey refuses n, the key the caller gives numeric inc field f of
// a model (in sc, for a scoped field), when it is above topKey and ahead
// of the counter.
func (k *Keys) refuseTopKey(ctx context.Context, p *plan, t *target, f *fieldPlan, sc scope, n uint64) error {
	top := topKey(f)
	if n <= top {
		return nil
	}
	seq, _, err := k.sequenceFor(ctx, p, t, f, sc)
	if err != nil {
		return err
	}
	cur, err := seq.Current(ctx)
	if err != nil {
		return fmt.Errorf("autokeys: %v field %s: %w", p.schema.Type, f.Name, err)
	}
	if cur > 0 && n <= uint64(cur) {
		return nil // the counter is past it already
	}
	return fmt.Errorf("autokeys: %v field %s `auto:\"%s\"`: the key %d the caller gives is above %d, the largest a caller may choose: the counter, moved past it, could hand out no block after it (the top quarter of the field's range is left to the counter): %w",
		p.schema.Type, f.Name, f.Tag, n, top, sequence.ErrInvalidArgument)
}

// refuseTopKeyOf checks the key the caller set in field f of the model mv.
func (k *Keys) refuseTopKeyOf(ctx context.Context, p *plan, t *target, f *fieldPlan, mv reflect.Value) error {
	if f.Kind != model.Inc || f.Format != nil {
		return nil
	}
	fv := f.Value(mv)
	var n uint64
	if fv.CanInt() {
		if fv.Int() <= 0 {
			return nil
		}
		n = uint64(fv.Int())
	} else {
		n = fv.Uint()
	}
	if n <= topKey(f) {
		return nil
	}
	sc, err := k.scopeOf(ctx, p, f, mv)
	if err != nil {
		return err
	}
	return k.refuseTopKey(ctx, p, t, f, sc, n)
}

// refuseTopKeyIn checks the key an upsert's update gives field f, as
// $setOnInsert (where the repository puts the filter's equalities too),
// as e's registry writes it.
func (k *Keys) refuseTopKeyIn(ctx context.Context, p *plan, t *target, f *fieldPlan, e *events.Event, u *mql.Update) error {
	if f.Kind != model.Inc || f.Format != nil {
		return nil
	}
	fields, _, err := u.Operator("$setOnInsert")
	if err != nil {
		return err
	}
	for _, x := range fields {
		if x.Key != f.BSON {
			continue
		}
		reg := e.Registry
		if reg == nil {
			reg = plainRegistry
		}
		v, err := bsonio.MarshalValue(reg, x.Value)
		if err != nil {
			return nil // the repository refuses what does not encode
		}
		n, ok := v.AsInt64OK()
		if !ok || n <= 0 || uint64(n) <= topKey(f) {
			return nil
		}
		sc, err := k.upsertScope(ctx, p, f, e.Filter, u)
		if err != nil {
			return err
		}
		return k.refuseTopKey(ctx, p, t, f, sc, uint64(n))
	}
	return nil
}
