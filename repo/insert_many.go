package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// InsertMany inserts ms with one driver InsertMany. mgm's Creating and
// Saving hooks run for every model first, then BeforeConvert and BeforeSave
// for each in turn (Event.Batch holds them all, so AutoKeys takes all its
// numbers in one round trip); any error there aborts with nothing written.
// After the write, AfterSave, Created and Saved run for each model. If the
// write fails part way (the insert is ordered), the error says how many
// models were written, and AfterSave runs for each of those, so that
// listeners learn what was stored (the outbox empties their recorders).
func (r *Repository[T]) InsertMany(ctx context.Context, ms []T) error {
	if o := r.operation("InsertMany", events.OpInsertMany); o != nil {
		return r.bus.Intercept(ctx, o, func(ctx context.Context) error { return r.insertMany(ctx, o, ms) })
	}
	return r.insertMany(ctx, nil, ms)
}

func (r *Repository[T]) insertMany(ctx context.Context, o *events.Operation, ms []T) error {
	if len(ms) == 0 {
		return nil
	}
	mvs := make([]reflect.Value, len(ms))
	for i, m := range ms {
		mv := reflect.ValueOf(m)
		if !mv.IsValid() || mv.IsNil() {
			_, err := r.check(m, fmt.Sprintf("InsertMany(models[%d])", i)) // names the model only on failure
			return err
		}
		if r.oid == nil {
			if _, err := r.getID(m); err != nil {
				return r.wrap("InsertMany", fmt.Errorf("models[%d]: %w", i, err))
			}
		}
		mvs[i] = mv
	}
	for i, m := range ms {
		if err := beforeCreate(ctx, m); err != nil {
			return r.wrap("InsertMany", fmt.Errorf("model hook of models[%d]: %w", i, err))
		}
	}
	e := r.event(ctx, events.OpInsertMany)
	defer release(e)
	if e != nil {
		e.Batch = make([]any, len(ms))
		for i, m := range ms {
			e.Batch[i] = m
		}
	}
	zero := make([]uint64, len(ms))
	for i := range ms {
		zero[i] = zeroAuto(r.schema, mvs[i])
	}
	undos := make([]undo, len(ms))
	docs := make([]any, len(ms))
	for from, attempt := 0, 0; ; attempt++ {
		for i := from; i < len(ms); i++ {
			if e != nil {
				e.Model, e.Index = ms[i], i
			}
			doc, u, err := r.prepare(ctx, e, ms[i], mvs[i], events.OpInsert, nil)
			if err != nil {
				for j := from; j < len(ms); j++ {
					if j < i {
						r.undo(&undos[j], ms[j], mvs[j])
					}
					resetAuto(r.schema, mvs[j], zero[j])
				}
				return r.wrap("InsertMany", fmt.Errorf("models[%d]: %w", i, err))
			}
			if p, ok := doc.(*bson.Raw); ok {
				doc = *p // e.Document will hold the next model's document
			}
			docs[i], undos[i] = doc, u
		}
		res, err := r.coll.InsertMany(ctx, docs[from:])
		if err == nil {
			if o != nil {
				o.Inserted = int64(len(ms))
			}
			// Every document is stored: each model gets its ID, and a
			// SetID that fails for one does not stop the others'; then
			// AfterSave runs for all, without mgm's hooks, as Insert does.
			var idErrs []error
			for i, id := range res.InsertedIDs {
				if u := &undos[from+i]; !u.genID {
					if err := r.setID(ms[from+i], id, u.driverID); err != nil {
						idErrs = append(idErrs, fmt.Errorf("models[%d]: %w", from+i, err))
					}
				}
			}
			if len(idErrs) > 0 {
				return errors.Join(r.wrap("InsertMany", errors.Join(idErrs...)), r.savedPrefix(ctx, e, ms, docs))
			}
			break
		}
		failed := from + firstFailed(err)
		if res != nil {
			// The models written before the failure keep the IDs the
			// driver gave them.
			for i := from; i < failed && i-from < len(res.InsertedIDs); i++ {
				if undos[i].driverID {
					if serr := r.setID(ms[i], res.InsertedIDs[i-from], true); serr != nil {
						err = fmt.Errorf("%w (and models[%d]: %w)", err, i, serr)
					}
				}
			}
		}
		for j := failed; j < len(ms); j++ {
			r.undo(&undos[j], ms[j], mvs[j])
		}
		if e != nil {
			e.Model, e.Index, e.Document = ms[failed], failed, nil
		}
		retry, err := r.retryable(ctx, e, err, attempt)
		for j := failed; j < len(ms); j++ {
			resetAuto(r.schema, mvs[j], zero[j])
		}
		if retry {
			from = failed
			continue
		}
		if o != nil {
			o.Inserted = int64(failed)
		}
		err = r.wrap("InsertMany", fmt.Errorf("models[%d] failed; models[:%d] were written: %w", failed, failed, err))
		return errors.Join(err, r.savedPrefix(ctx, e, ms[:failed], docs))
	}
	// Every model was stored: AfterSave and mgm's hooks run for each, and a
	// failure of one does not keep the others from theirs.
	var errs []error
	for i, m := range ms {
		if e != nil {
			e.Model, e.Index = m, i
			e.Document, _ = docs[i].(bson.Raw)
			if err := r.publish(ctx, e, events.AfterSave); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := afterCreate(ctx, m); err != nil {
			errs = append(errs, r.wrap("InsertMany", fmt.Errorf("model hook of models[%d] after the write: %w", i, err)))
		}
	}
	return errors.Join(errs...)
}

// firstFailed returns the index of the first document an ordered
// InsertMany did not write.
func firstFailed(err error) int {
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && len(bwe.WriteErrors) > 0 {
		return bwe.WriteErrors[0].Index
	}
	return 0
}

// savedPrefix publishes AfterSave for written, the models a failed
// InsertMany wrote, and returns what the listeners returned.
func (r *Repository[T]) savedPrefix(ctx context.Context, e *events.Event, written []T, docs []any) error {
	if e == nil {
		return nil
	}
	var errs []error
	for i, m := range written {
		e.Model, e.Index = m, i
		e.Document, _ = docs[i].(bson.Raw)
		errs = append(errs, r.publish(ctx, e, events.AfterSave))
	}
	return errors.Join(errs...)
}
