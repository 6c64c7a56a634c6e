package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Delete deletes m's document by its ID. Deleting a missing document is
// not an error; AfterDelete's DeletedCount is then 0. The delete of a
// versioned model (auto:"version") is filtered on its version too, as
// Spring's MongoTemplate does: when the stored document has another
// version, nothing is deleted (or marked, under a soft delete) and the
// error wraps ErrVersionConflict.
func (r *Repository[T]) Delete(ctx context.Context, m T) error {
	if o := r.operation("Delete", events.OpDelete); o != nil {
		return r.bus.Intercept(ctx, o, func(ctx context.Context) error { return r.deleteModel(ctx, o, m) })
	}
	return r.deleteModel(ctx, nil, m)
}

func (r *Repository[T]) deleteModel(ctx context.Context, o *events.Operation, m T) error {
	if _, err := r.check(m, "Delete"); err != nil {
		return err
	}
	if err := beforeDelete(ctx, m); err != nil {
		return r.wrap("Delete", fmt.Errorf("model hook: %w", err))
	}
	e := r.event(ctx, events.OpDelete)
	if e != nil {
		e.Model = m
	}
	filter := bson.D{{Key: "_id", Value: m.GetID()}}
	if v := r.schema.Version; v != nil {
		filter = append(filter, bson.E{Key: v.BSON, Value: v.Value(reflect.ValueOf(m).Elem()).Interface()})
	}
	res, err := r.delete(ctx, e, filter, false)
	deleted(o, res)
	if err == nil && res.DeletedCount == 0 && r.schema.Version != nil {
		if merr := r.missing(ctx, m.GetID()); errors.Is(merr, ErrVersionConflict) {
			err = merr
		}
	}
	if err != nil {
		return r.wrap("Delete", err)
	}
	if err := afterDelete(ctx, m, res); err != nil {
		return r.wrap("Delete", fmt.Errorf("model hook after the delete: %w", err))
	}
	return nil
}

// DeleteMany deletes every document that matches filter. Its result's
// DeletedCount is how many it deleted (or, when a BeforeDelete listener
// turns the delete into an update, such as a soft delete, how many it
// changed). A nil filter is refused: pass bson.D{} to delete every
// document.
func (r *Repository[T]) DeleteMany(ctx context.Context, filter any) (*mongo.DeleteResult, error) {
	if o := r.operation("DeleteMany", events.OpDeleteMany); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*mongo.DeleteResult, error) { return r.deleteMany(ctx, o, filter) })
	}
	return r.deleteMany(ctx, nil, filter)
}

func (r *Repository[T]) deleteMany(ctx context.Context, o *events.Operation, filter any) (*mongo.DeleteResult, error) {
	if err := needFilter(filter); err != nil {
		return nil, r.wrap("DeleteMany", err)
	}
	res, err := r.delete(ctx, r.event(ctx, events.OpDeleteMany), filter, true)
	deleted(o, res)
	if err != nil {
		return res, r.wrap("DeleteMany", err) // res is not nil when an AfterDelete listener failed
	}
	return res, nil
}

// DeleteOne deletes the first document that matches filter, as DeleteMany
// does every one: it publishes BeforeQuery, BeforeDelete and AfterDelete,
// and its result's DeletedCount is 0 or 1. A nil filter is refused: pass
// bson.D{} to delete any one document.
func (r *Repository[T]) DeleteOne(ctx context.Context, filter any) (*mongo.DeleteResult, error) {
	if o := r.operation("DeleteOne", events.OpDeleteOne); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*mongo.DeleteResult, error) { return r.deleteOne(ctx, o, filter) })
	}
	return r.deleteOne(ctx, nil, filter)
}

func (r *Repository[T]) deleteOne(ctx context.Context, o *events.Operation, filter any) (*mongo.DeleteResult, error) {
	if err := needFilter(filter); err != nil {
		return nil, r.wrap("DeleteOne", err)
	}
	res, err := r.delete(ctx, r.event(ctx, events.OpDeleteOne), filter, false)
	deleted(o, res)
	if err != nil {
		return res, r.wrap("DeleteOne", err)
	}
	return res, nil
}

// deleted records in o, when not nil, what res counts.
func deleted(o *events.Operation, res *mongo.DeleteResult) {
	if o != nil && res != nil {
		o.Deleted = res.DeletedCount
	}
}

// delete publishes BeforeQuery and BeforeDelete, deletes, and publishes
// AfterDelete. After the delete, it returns the result with any error.
func (r *Repository[T]) delete(ctx context.Context, e *events.Event, filter any, many bool) (*mongo.DeleteResult, error) {
	filter, err := r.beforeDelete(ctx, e, filter)
	if err != nil {
		return nil, err
	}
	update, err := r.deleteAs(e)
	if err != nil {
		return nil, err
	}
	res := &mongo.DeleteResult{}
	switch {
	case update != nil:
		res.DeletedCount, err = r.deleteByUpdate(ctx, e, filter, update, many)
	case many:
		res, err = r.coll.DeleteMany(ctx, filter)
	default:
		res, err = r.coll.DeleteOne(ctx, filter)
	}
	if err != nil {
		return nil, err
	}
	return res, r.afterDelete(ctx, e, res.DeletedCount)
}

// deleteByUpdate applies the update a BeforeDelete listener asked for
// instead of the delete (a soft delete), and returns how many documents it
// changed.
func (r *Repository[T]) deleteByUpdate(ctx context.Context, e *events.Event, filter, update any, many bool) (int64, error) {
	update, err := r.deleteUpdate(e, filter, update)
	if err != nil {
		return 0, err
	}
	sent, err := guarded(e, filter, many, false)
	if err != nil {
		return 0, err
	}
	var res *mongo.UpdateResult
	if many {
		res, err = r.coll.UpdateMany(ctx, sent, update)
	} else {
		res, err = r.coll.UpdateOne(ctx, sent, update)
	}
	if missed(e, res, err) {
		if gerr := r.guardMiss(ctx, e, filter); gerr != nil {
			return 0, gerr
		}
	}
	if err != nil {
		return 0, err
	}
	if m, ok := e.Model.(T); ok && e.Op == events.OpDelete && res.ModifiedCount == 1 {
		r.keepUp(m, update)
	}
	return res.ModifiedCount, nil
}

// deleteUpdate checks a BeforeDelete listener's update and, for a
// versioned model, adds the version increment, so that a stale Save of a
// soft-deleted document conflicts; then it adds the listeners' Extra.
func (r *Repository[T]) deleteUpdate(e *events.Event, filter, update any) (any, error) {
	if err := checkUpdate(update); err != nil {
		return nil, fmt.Errorf("the update a BeforeDelete listener set: %w", err)
	}
	if r.schema.Version != nil {
		var err error
		if update, err = r.completeUpdate(filter, update, false); err != nil {
			return nil, err
		}
	}
	return r.withExtra(update, e.Additions().Extra, "AddExtra")
}

// beforeDelete publishes BeforeQuery, then BeforeDelete with the final
// filter, and returns that filter.
func (r *Repository[T]) beforeDelete(ctx context.Context, e *events.Event, filter any) (any, error) {
	filter, err := r.query(ctx, e, filter)
	if err != nil {
		return nil, err
	}
	if err := r.publish(ctx, e, events.BeforeDelete); err != nil {
		return nil, err
	}
	return filter, nil
}

func (r *Repository[T]) afterDelete(ctx context.Context, e *events.Event, n int64) error {
	if e == nil {
		return nil
	}
	e.DeletedCount = n
	return r.publish(ctx, e, events.AfterDelete)
}

// FindOneAndDelete deletes the first document that matches filter and
// returns it (when a BeforeDelete listener turns the delete into an
// update, the document as updated). It publishes BeforeQuery, BeforeDelete, AfterDelete, and then
// AfterLoad and AfterConvert for the returned document. A nil filter is
// refused (pass bson.D{} for any document); when nothing matches, the error
// wraps ErrNotFound. mgm's hooks do not run: they need a model instance.
func (r *Repository[T]) FindOneAndDelete(ctx context.Context, filter any, opts ...*options.FindOneAndDeleteOptions) (T, error) {
	if o := r.operation("FindOneAndDelete", events.OpFindOneAndDelete); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (T, error) { return r.findOneAndDelete(ctx, o, filter, opts) })
	}
	return r.findOneAndDelete(ctx, nil, filter, opts)
}

func (r *Repository[T]) findOneAndDelete(ctx context.Context, o *events.Operation, filter any, opts []*options.FindOneAndDeleteOptions) (T, error) {
	opts = ownOptions(opts)
	var zero T
	if err := needFilter(filter); err != nil {
		return zero, r.wrap("FindOneAndDelete", err)
	}
	e := r.event(ctx, events.OpFindOneAndDelete)
	describe(e, opts, func(o *options.FindOneAndDeleteOptions) any { return o.Sort },
		func(o *options.FindOneAndDeleteOptions) any { return o.Projection },
		func(o *options.FindOneAndDeleteOptions) *options.Collation { return o.Collation })
	filter, err := r.beforeDelete(ctx, e, filter)
	if err != nil {
		return zero, r.wrap("FindOneAndDelete", err)
	}
	var raw bson.Raw
	update, err := r.deleteAs(e)
	if err != nil {
		return zero, r.wrap("FindOneAndDelete", err)
	}
	if update != nil {
		if update, err = r.deleteUpdate(e, filter, update); err != nil {
			return zero, r.wrap("FindOneAndDelete", err)
		}
		var sent any
		if sent, err = guarded(e, filter, false, false); err != nil {
			return zero, r.wrap("FindOneAndDelete", err)
		}
		raw, err = r.coll.FindOneAndUpdate(ctx, sent, update, markOptions(opts)).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) && len(e.Additions().Guards) > 0 {
			if gerr := r.guardMiss(ctx, e, filter); gerr != nil {
				return zero, r.wrap("FindOneAndDelete", gerr)
			}
		}
	} else {
		raw, err = r.coll.FindOneAndDelete(ctx, filter, opts...).Raw()
	}
	if err != nil && err != mongo.ErrNoDocuments {
		return zero, r.wrap("FindOneAndDelete", err)
	}
	var n int64
	if err == nil {
		n = 1
	}
	if o != nil {
		o.Deleted = n
	}
	if aerr := r.afterDelete(ctx, e, n); aerr != nil {
		return zero, aerr
	}
	if err != nil {
		return zero, r.wrap("FindOneAndDelete", err)
	}
	m, err := r.decode(ctx, e, raw)
	if err != nil {
		return zero, r.wrap("FindOneAndDelete", err)
	}
	if o != nil {
		o.Returned = 1
	}
	return m, nil
}

// markOptions turns FindOneAndDelete's options into those of the
// FindOneAndUpdate that replaces it in a soft delete, which returns the
// document as marked.
func markOptions(opts []*options.FindOneAndDeleteOptions) *options.FindOneAndUpdateOptions {
	return carryOptions(options.FindOneAndUpdate().SetReturnDocument(options.After), opts)
}
