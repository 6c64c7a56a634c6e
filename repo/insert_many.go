package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/kamva/mgm/v3"
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
	mvs, err := r.checkMany(ms)
	if err != nil {
		return err
	}
	for i, m := range ms {
		if err := beforeCreate(ctx, m); err != nil {
			return r.wrap("InsertMany", fmt.Errorf("model hook of models[%d]: %w", i, err))
		}
	}
	e := r.event(ctx, events.OpInsertMany)
	defer release(e)
	b := &insertBatch[T]{r: r, o: o, e: e, ms: ms, mvs: mvs,
		zero: make([]uint64, len(ms)), undos: make([]undo, len(ms)), docs: make([]any, len(ms))}
	if e != nil {
		e.Batch = make([]any, len(ms))
		for i, m := range ms {
			e.Batch[i] = m
		}
	}
	for i := range ms {
		b.zero[i] = zeroAuto(r.schema, mvs[i])
	}
	if err := b.write(ctx); err != nil {
		return err
	}
	return b.saved(ctx)
}

// checkMany refuses a nil model among ms, and one whose ID cannot be read,
// and returns their reflect.Values.
func (r *Repository[T]) checkMany(ms []T) ([]reflect.Value, error) {
	mvs := make([]reflect.Value, len(ms))
	for i, m := range ms {
		mv := reflect.ValueOf(m)
		if !mv.IsValid() || mv.IsNil() {
			_, err := r.check(m, fmt.Sprintf("InsertMany(models[%d])", i)) // names the model only on failure
			return nil, err
		}
		if r.oid == nil {
			if _, err := r.getID(m); err != nil {
				return nil, r.wrap("InsertMany", fmt.Errorf("models[%d]: %w", i, err))
			}
		}
		mvs[i] = mv
	}
	return mvs, nil
}

// insertBatch is one InsertMany under way: its models, the auto fields
// each had unset (zero), what to undo on each when an attempt fails, and
// the documents sent.
type insertBatch[T mgm.Model] struct {
	r     *Repository[T]
	o     *events.Operation // nil without interceptors
	e     *events.Event     // nil without events
	ms    []T
	mvs   []reflect.Value
	zero  []uint64
	undos []undo
	docs  []any
}

// write sends the batch, again from the model that failed for as long as
// a listener repairs the failure (see Repository.retryable). It returns
// nil when every model was stored and got its ID.
func (b *insertBatch[T]) write(ctx context.Context) error {
	for from, attempt := 0, 0; ; attempt++ {
		if err := b.prepare(ctx, from); err != nil {
			return err
		}
		res, err := b.r.coll.InsertMany(ctx, b.docs[from:])
		if err == nil {
			return b.stored(ctx, from, res)
		}
		failed := from + firstFailed(err)
		retry, err := b.failed(ctx, from, failed, attempt, res, err)
		if !retry {
			return err
		}
		from = failed
	}
}

// prepare publishes BeforeConvert and BeforeSave for the models from on
// and encodes their documents. When one fails, the models it prepared are
// restored, and the error names the one that failed.
func (b *insertBatch[T]) prepare(ctx context.Context, from int) error {
	for i := from; i < len(b.ms); i++ {
		if b.e != nil {
			b.e.Model, b.e.Index = b.ms[i], i
		}
		doc, u, err := b.r.prepare(ctx, b.e, b.ms[i], b.mvs[i], events.OpInsert, nil)
		if err != nil {
			for j := from; j < len(b.ms); j++ {
				if j < i {
					b.r.undo(&b.undos[j], b.ms[j], b.mvs[j])
				}
				resetAuto(b.r.schema, b.mvs[j], b.zero[j])
			}
			return b.r.wrap("InsertMany", fmt.Errorf("models[%d]: %w", i, err))
		}
		if p, ok := doc.(*bson.Raw); ok {
			doc = *p // e.Document will hold the next model's document
		}
		b.docs[i], b.undos[i] = doc, u
	}
	return nil
}

// stored gives each model written from from on the ID the write gave it;
// a SetID that fails for one does not stop the others', and then AfterSave
// runs for all, without mgm's hooks, as Insert does.
func (b *insertBatch[T]) stored(ctx context.Context, from int, res *mongo.InsertManyResult) error {
	if b.o != nil {
		b.o.Inserted = int64(len(b.ms))
	}
	var idErrs []error
	for i, id := range res.InsertedIDs {
		if u := &b.undos[from+i]; !u.genID {
			if err := b.r.setID(b.ms[from+i], id, u.driverID); err != nil {
				idErrs = append(idErrs, fmt.Errorf("models[%d]: %w", from+i, err))
			}
		}
	}
	if len(idErrs) > 0 {
		return errors.Join(b.r.wrap("InsertMany", errors.Join(idErrs...)), b.r.savedPrefix(ctx, b.e, b.ms, b.docs))
	}
	return nil
}

// failed handles a write of the models from from on that stopped at
// model failed with err: the models written before keep the IDs the
// driver gave them, the others are restored, and a listener may repair
// the failure (retry). Otherwise the error says how many were written,
// and AfterSave runs for those.
func (b *insertBatch[T]) failed(ctx context.Context, from, failed, attempt int, res *mongo.InsertManyResult, err error) (retry bool, _ error) {
	if res != nil {
		for i := from; i < failed && i-from < len(res.InsertedIDs); i++ {
			if b.undos[i].driverID {
				if serr := b.r.setID(b.ms[i], res.InsertedIDs[i-from], true); serr != nil {
					err = fmt.Errorf("%w (and models[%d]: %w)", err, i, serr)
				}
			}
		}
	}
	for j := failed; j < len(b.ms); j++ {
		b.r.undo(&b.undos[j], b.ms[j], b.mvs[j])
	}
	if b.e != nil {
		b.e.Model, b.e.Index, b.e.Document = b.ms[failed], failed, nil
	}
	retry, err = b.r.retryable(ctx, b.e, err, attempt)
	for j := failed; j < len(b.ms); j++ {
		resetAuto(b.r.schema, b.mvs[j], b.zero[j])
	}
	if retry {
		return true, nil
	}
	if b.o != nil {
		b.o.Inserted = int64(failed)
	}
	err = b.r.wrap("InsertMany", fmt.Errorf("models[%d] failed; models[:%d] were written: %w", failed, failed, err))
	return false, errors.Join(err, b.r.savedPrefix(ctx, b.e, b.ms[:failed], b.docs))
}

// saved runs, once every model was stored, AfterSave and mgm's hooks for
// each; a failure of one does not keep the others from theirs.
func (b *insertBatch[T]) saved(ctx context.Context) error {
	var errs []error
	for i, m := range b.ms {
		if b.e != nil {
			b.e.Model, b.e.Index = m, i
			b.e.Document, _ = b.docs[i].(bson.Raw)
			if err := b.r.publish(ctx, b.e, events.AfterSave); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := afterCreate(ctx, m); err != nil {
			errs = append(errs, b.r.wrap("InsertMany", fmt.Errorf("model hook of models[%d] after the write: %w", i, err)))
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
