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
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ReplaceOne replaces the first document that matches filter with the
// model m, and returns the driver's result. With
// options.Replace().SetUpsert(true) it inserts m when none matches, and
// gives m the _id the server made when m had none.
//
// It runs what Save runs for a stored model: mgm's Updating and Saving
// hooks, BeforeQuery (the filter, with Event.Model set), BeforeConvert,
// BeforeSave, the replace, then AfterSave and the Updated and Saved hooks
// when a document was replaced or inserted. When none matched, the result
// says so (MatchedCount 0) and no After* event or hook runs.
//
// When m has an ID, the document it replaces must have the same _id
// (MongoDB never changes one). When it has none (DefaultModel's zero
// ObjectID, which is not encoded), the document keeps its own. A nil
// filter is refused: pass bson.D{} to replace any one document. A model
// with an `auto:"version"` field is refused: use Save, which checks the
// version it read.
func (r *Repository[T]) ReplaceOne(ctx context.Context, filter any, m T, opts ...*options.ReplaceOptions) (*mongo.UpdateResult, error) {
	if o := r.operation("ReplaceOne", events.OpReplaceOne); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*mongo.UpdateResult, error) {
			return r.replaceOne(ctx, o, filter, m, opts)
		})
	}
	return r.replaceOne(ctx, nil, filter, m, opts)
}

func (r *Repository[T]) replaceOne(ctx context.Context, o *events.Operation, filter any, m T, opts []*options.ReplaceOptions) (*mongo.UpdateResult, error) {
	opts = ownOptions(opts)
	const method = "ReplaceOne"
	upsert := lastOpt(opts, func(o *options.ReplaceOptions) *bool { return o.Upsert })
	rep, err := r.beforeReplace(ctx, events.OpReplaceOne, filter, m, upsert != nil && *upsert, func(e *events.Event) {
		describe(e, opts, sortOf[options.ReplaceOptions], nil, func(o *options.ReplaceOptions) *options.Collation { return o.Collation })
	})
	if err != nil {
		return nil, r.wrap(method, err)
	}
	defer release(rep.e)
	var res *mongo.UpdateResult
	if !adds(rep.e) {
		res, err = r.coll.ReplaceOne(ctx, rep.filter, rep.doc, opts...)
	} else {
		var update, sent any
		if update, sent, err = rep.asUpdate(r); err == nil {
			res, err = r.coll.UpdateOne(ctx, sent, update, updateOptions(opts))
			if missed(rep.e, res, err) {
				if gerr := r.guardMiss(ctx, rep.e, rep.filter); gerr != nil {
					err = gerr
				}
			}
		}
	}
	if err != nil {
		rep.undo(r)
		return nil, r.wrap(method, err)
	}
	if o != nil {
		o.Matched, o.Modified, o.Upserted = res.MatchedCount, res.ModifiedCount, res.UpsertedCount
	}
	if res.MatchedCount == 0 && res.UpsertedCount == 0 {
		rep.undo(r)
		return res, nil
	}
	if res.UpsertedID != nil {
		if err := rep.upserted(r, res.UpsertedID); err != nil {
			return res, r.unidentified(ctx, rep, method, err)
		}
	}
	return res, r.afterReplace(ctx, rep, method, res)
}

// FindOneAndReplace replaces the first document that matches filter with
// the model m, as ReplaceOne does, and returns the document as it was
// before, or, with options.FindOneAndReplace().SetReturnDocument(
// options.After), as it is after. It publishes what ReplaceOne publishes,
// then AfterLoad and AfterConvert for the returned document, and runs the
// same hooks. When nothing is returned (none matched, or an upsert
// inserted m and the document before was asked for), the error wraps
// ErrNotFound. After an upsert that returns the document, m holds the _id
// the server gave it, if it had none.
func (r *Repository[T]) FindOneAndReplace(ctx context.Context, filter any, m T, opts ...*options.FindOneAndReplaceOptions) (T, error) {
	if o := r.operation("FindOneAndReplace", events.OpFindOneAndReplace); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (T, error) { return r.findOneAndReplace(ctx, o, filter, m, opts) })
	}
	return r.findOneAndReplace(ctx, nil, filter, m, opts)
}

func (r *Repository[T]) findOneAndReplace(ctx context.Context, o *events.Operation, filter any, m T, opts []*options.FindOneAndReplaceOptions) (T, error) {
	opts = ownOptions(opts)
	const method = "FindOneAndReplace"
	var zero T
	upsert := lastOpt(opts, func(o *options.FindOneAndReplaceOptions) *bool { return o.Upsert })
	rep, err := r.beforeReplace(ctx, events.OpFindOneAndReplace, filter, m, upsert != nil && *upsert, func(e *events.Event) {
		describe(e, opts, func(o *options.FindOneAndReplaceOptions) any { return o.Sort },
			func(o *options.FindOneAndReplaceOptions) any { return o.Projection },
			func(o *options.FindOneAndReplaceOptions) *options.Collation { return o.Collation })
	})
	if err != nil {
		return zero, r.wrap(method, err)
	}
	defer release(rep.e)
	var raw bson.Raw
	if !adds(rep.e) {
		raw, err = r.coll.FindOneAndReplace(ctx, rep.filter, rep.doc, opts...).Raw()
	} else {
		var update, sent any
		if update, sent, err = rep.asUpdate(r); err == nil {
			raw, err = r.coll.FindOneAndUpdate(ctx, sent, update, findOneAndUpdateOptions(opts)).Raw()
			// An upsert that returns no document inserted one (the document
			// before was asked for): the write is done, and the document now
			// matches the filter, so guardMiss would blame a guard. Only a
			// duplicate key can be its guarded miss, as in FindOneAndUpdate.
			inserted := rep.upsert && errors.Is(err, mongo.ErrNoDocuments)
			if !inserted && (errors.Is(err, mongo.ErrNoDocuments) || mongo.IsDuplicateKeyError(err)) {
				if gerr := r.guardMiss(ctx, rep.e, rep.filter); gerr != nil {
					err = gerr
				}
			}
		}
	}
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		rep.undo(r)
		return zero, r.wrap(method, err)
	}
	// Nothing returned: none matched, and an upsert then inserted m (it
	// reports no error), or nothing was written.
	if err != nil && !rep.upsert {
		rep.undo(r)
		return zero, r.wrap(method, fmt.Errorf("no document matches the filter: %w", ErrNotFound))
	}
	res := &mongo.UpdateResult{MatchedCount: 1, ModifiedCount: 1}
	if err != nil {
		res = &mongo.UpdateResult{UpsertedCount: 1}
	}
	if o != nil {
		o.Matched, o.Modified, o.Upserted = res.MatchedCount, res.ModifiedCount, res.UpsertedCount
	}
	if id, lerr := raw.LookupErr("_id"); lerr == nil && rep.upsert {
		if err := rep.upserted(r, id); err != nil {
			return zero, r.unidentified(ctx, rep, method, err)
		}
	}
	if err := r.afterReplace(ctx, rep, method, res); err != nil {
		return zero, err
	}
	if raw == nil {
		return zero, r.wrap(method, fmt.Errorf("an upsert inserted the model, and the document before it was asked for: %w", ErrNotFound))
	}
	got, err := r.decode(ctx, rep.e, raw)
	if err != nil {
		return zero, r.wrap(method, err)
	}
	if o != nil {
		o.Returned = 1
	}
	return got, nil
}

// replacing is a replace by filter, prepared up to its write.
type replacing[T mgm.Model] struct {
	e      *events.Event
	m      T
	mv     reflect.Value
	filter any // the final filter, without guards
	doc    any // what to write, from prepare
	u      undo
	zero   uint64 // the model's auto fields that were zero
	upsert bool
}

// beforeReplace checks a replace by filter, runs mgm's hooks, publishes
// BeforeQuery, then BeforeConvert and BeforeSave (prepare), and returns
// the replace ready to send.
func (r *Repository[T]) beforeReplace(ctx context.Context, op events.Op, filter any, m T, upsert bool, describe func(*events.Event)) (*replacing[T], error) {
	mv := reflect.ValueOf(m)
	if !mv.IsValid() || mv.IsNil() {
		return nil, fmt.Errorf("nil %v: %w", r.schema.Type, ErrNilModel)
	}
	if err := needFilter(filter); err != nil {
		return nil, err
	}
	if vf := r.schema.Version; vf != nil {
		return nil, fmt.Errorf("%v has a version field %s `auto:\"version\"`, which a replace by filter cannot check: use Save, which checks the version it read: %w",
			r.schema.Type, vf.Name, ErrInvalidArgument)
	}
	if err := beforeUpdate(ctx, m); err != nil {
		return nil, fmt.Errorf("model hook: %w", err)
	}
	e := r.event(ctx, op)
	if e != nil {
		e.Model, e.Upsert = m, upsert
		describe(e)
	}
	rep := &replacing[T]{e: e, m: m, mv: mv, upsert: upsert, zero: zeroAuto(r.schema, mv)}
	var err error
	if rep.filter, err = r.query(ctx, e, filter); err != nil {
		release(e)
		return nil, err
	}
	if rep.doc, rep.u, err = r.prepare(ctx, e, m, mv, op, rep.filter); err != nil {
		resetAuto(r.schema, mv, rep.zero)
		release(e)
		return nil, err
	}
	return rep, nil
}

// asUpdate returns the replace as the update that carries what listeners
// added to it (see modelUpdate), and the filter with their guards.
func (rep *replacing[T]) asUpdate(r *Repository[T]) (update, filter any, err error) {
	if update, err = r.modelUpdate(rep.e, events.OpReplace, rep.doc, rep.m.GetID()); err != nil {
		return nil, nil, err
	}
	if filter, err = guarded(rep.e, rep.filter, false, rep.upsert); err != nil {
		return nil, nil, err
	}
	return update, filter, nil
}

// undo takes back what the replace set on the model: it was not written.
func (rep *replacing[T]) undo(r *Repository[T]) {
	r.undo(&rep.u, rep.m, rep.mv)
	resetAuto(r.schema, rep.mv, rep.zero)
}

// upserted gives the model id, the _id of the document an upsert inserted
// (a bson.RawValue as read back, or the driver's value), when it had none.
func (rep *replacing[T]) upserted(r *Repository[T], id any) error {
	if !isZeroID(rep.m.GetID()) {
		return nil
	}
	if rv, ok := id.(bson.RawValue); ok {
		var v any
		if err := rv.Unmarshal(&v); err != nil {
			return err
		}
		id = v
	}
	return r.setID(rep.m, id, false)
}

// afterReplace publishes AfterSave and runs mgm's Updated and Saved hooks
// for a replace that wrote the model.
func (r *Repository[T]) afterReplace(ctx context.Context, rep *replacing[T], method string, res *mongo.UpdateResult) error {
	if err := r.publish(ctx, rep.e, events.AfterSave); err != nil {
		return err
	}
	if err := afterUpdate(ctx, rep.m, res); err != nil {
		return r.wrap(method, fmt.Errorf("model hook after the write: %w", err))
	}
	return nil
}

// unidentified returns err, the failure to give the model the _id of the
// document an upsert inserted, joined with what AfterSave's listeners
// return: the write is done, so they learn of it (the outbox empties the
// recorder whose events it stored), as after InsertMany's written models
// (savedPrefix). mgm's Updated and Saved hooks do not run.
func (r *Repository[T]) unidentified(ctx context.Context, rep *replacing[T], method string, err error) error {
	return errors.Join(r.wrap(method, err), r.publish(ctx, rep.e, events.AfterSave))
}

// updateOptions turns ReplaceOne's options into those of the UpdateOne
// that carries what listeners added to the replace.
func updateOptions(opts []*options.ReplaceOptions) *options.UpdateOptions {
	return carryOptions(options.Update(), opts)
}

// findOneAndUpdateOptions turns FindOneAndReplace's options into those of
// the FindOneAndUpdate that carries what listeners added to the replace.
func findOneAndUpdateOptions(opts []*options.FindOneAndReplaceOptions) *options.FindOneAndUpdateOptions {
	return carryOptions(options.FindOneAndUpdate(), opts)
}
