package autokeys

import (
	"context"
	"reflect"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/sequence"
	"go.mongodb.org/mongo-driver/mongo"
)

// Unique indexes on inc and uuid fields, and counters moved past the data.
// A uuid field's index is on the field alone, across tenants, as an
// unscoped inc field's is: a UUID is no guess, and a key stays taken by a
// soft-deleted document, since keys are never reused.

// ensure makes the unique indexes in t's collection and moves the counters
// past its data, once per type and collection: at Prepare, or at the
// first write to a collection no repository was prepared for. An error
// (an index the data does not allow, a server out of reach) is returned,
// and ensure runs again at the next write.
func (k *Keys) ensure(p *plan, t *target) error {
	if t.ready.Load() {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ready.Load() {
		return nil
	}
	// Detached: index builds may not run inside the caller's transaction.
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range p.fields {
		f := p.fields[i]
		if k.indexes {
			if err := uniqueIndex(dctx, p, t.coll, f); err != nil {
				return err
			}
		}
		if f.Kind == model.Inc && f.Format == nil && !scoped(f) { // a scope's sequence is healed when first used
			if _, err := k.heal(dctx, p, t, f, f.seq, scope{}, 0); err != nil {
				return err
			}
		}
	}
	t.ready.Store(true)
	return nil
}

// heal moves seq, the counter of field f (for a scoped field, sc's), past
// the largest value of f in t's collection (in sc's documents) when that
// value is at least atLeast and ahead of the counter. It reports whether
// it moved it.
func (k *Keys) heal(ctx context.Context, p *plan, t *target, f *fieldPlan, seq *sequence.Sequence, sc scope, atLeast int64) (bool, error) {
	top, ok, err := sequence.MaxOfWhere(ctx, t.coll, f.BSON, sc.where(f))
	if err != nil || !ok || top < atLeast {
		return false, err
	}
	cur, err := seq.Current(ctx)
	if err != nil {
		return false, err
	}
	if top <= cur && atLeast == 0 {
		return false, nil
	}
	if err := seq.AdvancePast(ctx, top); err != nil {
		return false, err
	}
	k.logger.Info("mgmevents: numbers from the counter are already in the data; moved the counter past them",
		"sequence", seq.Name(), "type", p.schema.Type.String(), "collection", t.coll.Name(), "field", f.BSON, "max", top, "counter", cur)
	return true, nil
}

// HandleWriteError repairs a duplicate key caused by a counter that is
// behind the data: when the collection already holds a value at or above
// the number this model got, the counter is moved past the maximum and the
// write is retried.
func (k *Keys) HandleWriteError(ctx context.Context, e *events.Event, err error) (bool, error) {
	if !mongo.IsDuplicateKeyError(err) || e.Model == nil {
		return false, nil
	}
	p, perr := k.plan(e.ModelType)
	if perr != nil || len(p.fields) == 0 {
		return false, perr
	}
	t, perr := p.target(e)
	if perr != nil {
		return false, perr
	}
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	retry := false
	mv := reflect.ValueOf(e.Model).Elem()
	for i := range p.fields {
		f := p.fields[i]
		if f.Kind != model.Inc || f.Format != nil {
			continue // a formatted key or a UUID cannot be behind a counter
		}
		fv := f.Value(mv)
		var v int64
		if fv.CanInt() {
			v = fv.Int()
		} else {
			v = int64(fv.Uint())
		}
		if v == 0 {
			continue
		}
		seq, sc := f.seq, scope{}
		if scoped(f) {
			var herr error
			if sc, herr = storedScope(p, f, mv); herr != nil {
				return false, herr
			}
			if seq, _, herr = k.sequenceFor(dctx, p, t, f, sc); herr != nil {
				return false, herr
			}
		}
		moved, herr := k.heal(dctx, p, t, f, seq, sc, v)
		if herr != nil {
			return false, herr
		}
		retry = retry || moved
	}
	return retry, nil
}
