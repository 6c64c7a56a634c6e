package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// BulkWrite runs the driver's write models on the collection, each as its
// single twin: an InsertOneModel as Insert, an UpdateOneModel as UpdateOne,
// an UpdateManyModel as UpdateMany, a ReplaceOneModel as ReplaceOne, a
// DeleteOneModel as DeleteOne and a DeleteManyModel as DeleteMany, with
// the same events, hooks and policies, and the same refusals (a nil
// filter, a nil or foreign model). The documents of InsertOneModel and
// ReplaceOneModel must be models of type T.
//
// Each model is its own write, one round trip at least: BulkWrite is for
// code written against the driver's BulkWrite to keep every listener and
// policy, not for speed (InsertMany inserts many models in one write).
// The result adds up the twins' results; UpsertedIDs is keyed by the
// model's index. Ordered, the default, stops at the first model that
// fails and says how many were written before it; with
// options.BulkWrite().SetOrdered(false) every model is tried and the
// error joins the failures, each naming its index. The other options, and
// a delete model's Collation or Hint, are refused: they would be ignored.
//
// Before it writes anything, BulkWrite checks every model, ordered or
// not: a nil one (untyped, or a nil pointer of any kind), a nil or
// foreign Document or Replacement, a nil Filter or Update, gets the whole
// call refused with ErrInvalidArgument naming the model's index, and no
// model is written.
func (r *Repository[T]) BulkWrite(ctx context.Context, models []mongo.WriteModel, opts ...*options.BulkWriteOptions) (*mongo.BulkWriteResult, error) {
	if o := r.operation("BulkWrite", 0); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*mongo.BulkWriteResult, error) { return r.bulkWrite(ctx, o, models, opts) })
	}
	return r.bulkWrite(ctx, nil, models, opts)
}

func (r *Repository[T]) bulkWrite(ctx context.Context, o *events.Operation, models []mongo.WriteModel, opts []*options.BulkWriteOptions) (*mongo.BulkWriteResult, error) {
	const method = "BulkWrite"
	ordered := true
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if opt.BypassDocumentValidation != nil || opt.Comment != nil || opt.Let != nil || deprecatedBulkOptions(opt) {
			return nil, r.wrap(method, fmt.Errorf("only the Ordered option is supported: each write model is sent as its single twin, which the others would not reach: %w", ErrInvalidArgument))
		}
		if opt.Ordered != nil {
			ordered = *opt.Ordered
		}
	}
	if len(models) == 0 {
		return nil, r.wrap(method, fmt.Errorf("no write models: %w", ErrInvalidArgument))
	}
	if err := r.bulkCheck(models); err != nil {
		return nil, r.wrap(method, err)
	}
	res := &mongo.BulkWriteResult{UpsertedIDs: map[int64]any{}}
	var failed []error
	for i, wm := range models {
		err := r.bulkOne(ctx, wm, i, res)
		if err == nil {
			continue
		}
		err = fmt.Errorf("models[%d] (%T): %w", i, wm, err)
		if ordered {
			r.bulkDone(o, res)
			return res, r.wrap(method, fmt.Errorf("%w; models[:%d] were written", err, i))
		}
		failed = append(failed, err)
	}
	r.bulkDone(o, res)
	if len(failed) > 0 {
		return res, r.wrap(method, fmt.Errorf("%d of %d write models failed: %w", len(failed), len(models), errors.Join(failed...)))
	}
	return res, nil
}

// bulkOne runs write model wm, the i-th, which bulkCheck accepted, as its
// single twin, and adds its result to res.
func (r *Repository[T]) bulkOne(ctx context.Context, wm mongo.WriteModel, i int, res *mongo.BulkWriteResult) error {
	switch w := wm.(type) {
	case *mongo.InsertOneModel:
		m, err := r.bulkModel(w.Document, "Document")
		if err == nil {
			if err = r.insert(ctx, nil, m); err == nil {
				res.InsertedCount++
			}
		}
		return err
	case *mongo.UpdateOneModel:
		// Every option the model sets: Collation, Upsert, ArrayFilters,
		// Hint, and on driver v2 Sort.
		u := carryOptions(options.Update(), []*mongo.UpdateOneModel{w})
		return addUpdate(res, i)(r.updateBy(ctx, nil, events.OpUpdateOne, w.Filter, w.Update, []*options.UpdateOptions{u}))
	case *mongo.UpdateManyModel:
		u := carryOptions(options.Update(), []*mongo.UpdateManyModel{w})
		return addUpdate(res, i)(r.updateBy(ctx, nil, events.OpUpdateMany, w.Filter, w.Update, []*options.UpdateOptions{u}))
	case *mongo.ReplaceOneModel:
		m, err := r.bulkModel(w.Replacement, "Replacement")
		if err != nil {
			return err
		}
		o := carryOptions(options.Replace(), []*mongo.ReplaceOneModel{w})
		return addUpdate(res, i)(r.replaceOne(ctx, nil, w.Filter, m, []*options.ReplaceOptions{o}))
	case *mongo.DeleteOneModel: // bulkCheck refused its Collation and Hint
		return addDelete(res)(r.deleteOne(ctx, nil, w.Filter))
	case *mongo.DeleteManyModel:
		return addDelete(res)(r.deleteMany(ctx, nil, w.Filter))
	}
	return fmt.Errorf("not a write model BulkWrite knows: %w", ErrInvalidArgument)
}

var errDeleteOptions = fmt.Errorf("a delete model's Collation and Hint are not supported (DeleteOne and DeleteMany take none): %w", ErrInvalidArgument)

// bulkModel returns doc, a write model's document, as a model of type T.
func (r *Repository[T]) bulkModel(doc any, field string) (T, error) {
	m, ok := doc.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("%s is a %T; want a %v: %w", field, doc, r.schema.Type, ErrInvalidArgument)
	}
	return m, nil
}

// addUpdate returns a function that adds an update's or a replace's
// result to res, for the i-th write model, and passes its error on.
func addUpdate(res *mongo.BulkWriteResult, i int) func(*mongo.UpdateResult, error) error {
	return func(u *mongo.UpdateResult, err error) error {
		if u != nil {
			res.MatchedCount += u.MatchedCount
			res.ModifiedCount += u.ModifiedCount
			res.UpsertedCount += u.UpsertedCount
			if u.UpsertedID != nil {
				res.UpsertedIDs[int64(i)] = u.UpsertedID
			}
		}
		return err
	}
}

// addDelete returns a function that adds a delete's result to res and
// passes its error on.
func addDelete(res *mongo.BulkWriteResult) func(*mongo.DeleteResult, error) error {
	return func(d *mongo.DeleteResult, err error) error {
		if d != nil {
			res.DeletedCount += d.DeletedCount
		}
		return err
	}
}

// bulkDone records res in o, when not nil.
func (r *Repository[T]) bulkDone(o *events.Operation, res *mongo.BulkWriteResult) {
	if o != nil {
		o.Inserted, o.Matched, o.Modified = res.InsertedCount, res.MatchedCount, res.ModifiedCount
		o.Upserted, o.Deleted = res.UpsertedCount, res.DeletedCount
	}
}
