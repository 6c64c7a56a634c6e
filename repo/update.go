package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// UpdateOne applies update, a document of update operators ($set, $inc,
// ...) or an update pipeline, to the first document that matches filter.
// With options.Update().SetUpsert(true) it inserts a document when none
// matches; that document holds the equality conditions of the final filter
// (listeners' conditions included) on every server.
//
// It publishes BeforeQuery (the filter), BeforeUpdate (the update), and
// AfterUpdate (the counts). A nil filter is refused: pass bson.D{} to
// match every document. An update without operators is refused: use Save to
// replace a document. mgm's hooks do not run: they need a model instance,
// and mgm runs them for single-model operations only.
//
// The update that is sent, as the listeners leave it, never changes or
// removes an auto key (auto:"inc", auto:"uuid") or the version
// (auto:"version"), and never stores a key zero: a key may be written
// only as an upsert's non-zero $setOnInsert, and an upsert's filter
// equality on a key must not be zero. Anything else that writes one
// ($set, $unset, $inc, $rename, a pipeline stage) is refused with
// ErrInvalidArgument naming the field and the operator. This holds for
// UpdateMany and FindOneAndUpdate too.
func (r *Repository[T]) UpdateOne(ctx context.Context, filter, update any, opts ...*options.UpdateOptions) (*mongo.UpdateResult, error) {
	if o := r.operation("UpdateOne", events.OpUpdateOne); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*mongo.UpdateResult, error) {
			return r.updateBy(ctx, o, events.OpUpdateOne, filter, update, opts)
		})
	}
	return r.updateBy(ctx, nil, events.OpUpdateOne, filter, update, opts)
}

// UpdateMany applies update to every document that matches filter, as
// UpdateOne does to one. A nil filter is refused: pass bson.D{} to update
// every document.
func (r *Repository[T]) UpdateMany(ctx context.Context, filter, update any, opts ...*options.UpdateOptions) (*mongo.UpdateResult, error) {
	if o := r.operation("UpdateMany", events.OpUpdateMany); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*mongo.UpdateResult, error) {
			return r.updateBy(ctx, o, events.OpUpdateMany, filter, update, opts)
		})
	}
	return r.updateBy(ctx, nil, events.OpUpdateMany, filter, update, opts)
}

func (r *Repository[T]) updateBy(ctx context.Context, o *events.Operation, op events.Op, filter, update any, opts []*options.UpdateOptions) (*mongo.UpdateResult, error) {
	opts = ownOptions(opts)
	upsert := lastOpt(opts, func(o *options.UpdateOptions) *bool { return o.Upsert })
	e, filter, update, err := r.beforeUpdate(ctx, op, filter, update, upsert != nil && *upsert, func(e *events.Event) {
		describe(e, opts, sortOf[options.UpdateOptions], nil, func(o *options.UpdateOptions) *options.Collation { return o.Collation })
	})
	if err != nil {
		return nil, r.wrap(op.String(), err)
	}
	sent, err := guarded(e, filter, op == events.OpUpdateMany, upsert != nil && *upsert)
	if err != nil {
		return nil, r.wrap(op.String(), err)
	}
	var res *mongo.UpdateResult
	if op == events.OpUpdateMany {
		res, err = r.coll.UpdateMany(ctx, sent, update, opts...)
	} else {
		res, err = r.coll.UpdateOne(ctx, sent, update, opts...)
	}
	if missed(e, res, err) {
		if gerr := r.guardMiss(ctx, e, filter); gerr != nil {
			return nil, r.wrap(op.String(), gerr)
		}
	}
	if err != nil {
		return nil, r.wrap(op.String(), err)
	}
	if o != nil {
		o.Matched, o.Modified, o.Upserted = res.MatchedCount, res.ModifiedCount, res.UpsertedCount
	}
	if e != nil {
		e.MatchedCount, e.ModifiedCount, e.UpsertedCount, e.UpsertedID = res.MatchedCount, res.ModifiedCount, res.UpsertedCount, res.UpsertedID
		if err := r.publish(ctx, e, events.AfterUpdate); err != nil {
			return res, err
		}
	}
	return res, nil
}

// FindOneAndUpdate applies update to the first document that matches
// filter and returns that document, as it was before the update or, with
// options.FindOneAndUpdate().SetReturnDocument(options.After), after it.
// Upserts work as in UpdateOne. It publishes BeforeQuery, BeforeUpdate and
// AfterUpdate, then AfterLoad and AfterConvert for the returned document.
// When no document is returned (none matched, or an upsert inserted one and
// the document before was asked for), the error wraps ErrNotFound; after
// an upsert that inserted, the write is done all the same (AfterUpdate
// sees UpsertedCount 1).
func (r *Repository[T]) FindOneAndUpdate(ctx context.Context, filter, update any, opts ...*options.FindOneAndUpdateOptions) (T, error) {
	if o := r.operation("FindOneAndUpdate", events.OpFindOneAndUpdate); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (T, error) { return r.findOneAndUpdate(ctx, o, filter, update, opts) })
	}
	return r.findOneAndUpdate(ctx, nil, filter, update, opts)
}

func (r *Repository[T]) findOneAndUpdate(ctx context.Context, o *events.Operation, filter, update any, opts []*options.FindOneAndUpdateOptions) (T, error) {
	opts = ownOptions(opts)
	const method = "FindOneAndUpdate"
	var zero T
	upsert := lastOpt(opts, func(o *options.FindOneAndUpdateOptions) *bool { return o.Upsert })
	e, filter, update, err := r.beforeUpdate(ctx, events.OpFindOneAndUpdate, filter, update, upsert != nil && *upsert, func(e *events.Event) {
		describe(e, opts, func(o *options.FindOneAndUpdateOptions) any { return o.Sort },
			func(o *options.FindOneAndUpdateOptions) any { return o.Projection },
			func(o *options.FindOneAndUpdateOptions) *options.Collation { return o.Collation })
	})
	if err != nil {
		return zero, r.wrap(method, err)
	}
	sent, err := guarded(e, filter, false, upsert != nil && *upsert)
	if err != nil {
		return zero, r.wrap(method, err)
	}
	raw, err := r.coll.FindOneAndUpdate(ctx, sent, update, opts...).Raw()
	// An upsert matches a document or inserts one, so no document back
	// means it inserted one (the document before was asked for): the
	// update was applied. Only a duplicate key can be its guarded miss.
	upserted := upsert != nil && *upsert && errors.Is(err, mongo.ErrNoDocuments)
	if e != nil && len(e.Additions().Guards) > 0 && !upserted && (errors.Is(err, mongo.ErrNoDocuments) || mongo.IsDuplicateKeyError(err)) {
		if gerr := r.guardMiss(ctx, e, filter); gerr != nil {
			return zero, r.wrap(method, gerr)
		}
	}
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return zero, r.wrap(method, err)
	}
	var n, up int64
	if err == nil {
		n = 1
	}
	if upserted {
		up = 1
	}
	if o != nil {
		o.Matched, o.Modified, o.Upserted = n, n, up
	}
	if e != nil {
		e.MatchedCount, e.ModifiedCount, e.UpsertedCount = n, n, up
		if aerr := r.publish(ctx, e, events.AfterUpdate); aerr != nil {
			return zero, aerr
		}
	}
	if err != nil {
		return zero, r.wrap(method, err)
	}
	m, err := r.decode(ctx, e, raw)
	if err != nil {
		return zero, r.wrap(method, err)
	}
	if o != nil {
		o.Returned = 1
	}
	return m, nil
}

// beforeUpdate checks the arguments, publishes BeforeQuery, completes the
// update (the version, an upsert's equalities), publishes BeforeUpdate and
// checks the keys the update writes. It returns the event and what to
// send.
func (r *Repository[T]) beforeUpdate(ctx context.Context, op events.Op, filter, update any, upsert bool, describe func(*events.Event)) (*events.Event, any, any, error) {
	if err := needFilter(filter); err != nil {
		return nil, nil, nil, err
	}
	if err := checkUpdate(update); err != nil {
		return nil, nil, nil, err
	}
	e := r.event(ctx, op)
	if e != nil {
		describe(e)
		e.Upsert = upsert // BeforeQuery may treat an upsert's filter differently
		var err error
		if update, err = r.canon(update); err != nil {
			return nil, nil, nil, err
		}
	}
	filter, err := r.query(ctx, e, filter)
	if err != nil {
		return nil, nil, nil, err
	}
	if upsert {
		if err := r.refuseKeyEqualities(filter); err != nil {
			return nil, nil, nil, err
		}
	}
	if r.schema.Version != nil || upsert {
		if update, err = r.completeUpdate(filter, update, upsert); err != nil {
			return nil, nil, nil, err
		}
	}
	if e != nil {
		e.Update, e.Upsert = update, upsert
		if err := r.publish(ctx, e, events.BeforeUpdate); err != nil {
			return nil, nil, nil, err
		}
		if update, err = r.withExtra(e.Update, e.Additions().Extra, "AddExtra"); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := r.refuseKeyWrites(update, upsert); err != nil {
		return nil, nil, nil, err
	}
	return e, filter, update, nil
}

// checkUpdate refuses what is not an update, with an error that says what
// to pass instead: nil, an empty document, a document with a field that is
// not an operator, a model or any other struct, a value that is no
// document. It allocates nothing for valid bson.D and bson.M updates.
func checkUpdate(update any) error {
	var err error
	switch u := update.(type) {
	case nil:
		err = errors.New("nil update: " + operatorsHint)
	case bson.D:
		err = checkOperators(u)
	case bson.M:
		err = checkOperatorMap(u)
	case map[string]any:
		err = checkOperatorMap(u)
	default:
		if rv := reflect.Indirect(reflect.ValueOf(update)); rv.Kind() == reflect.Struct {
			return fmt.Errorf("update is a %T, a whole document, not update operators: to write a model use Save or Update; to change some fields %s: %w", update, operatorsHint, ErrInvalidArgument)
		}
		if mql.IsPipeline(update) {
			if _, perr := mql.ParseUpdate(update); perr != nil {
				return fmt.Errorf("update pipeline: %w: %w", perr, ErrInvalidArgument)
			}
			return nil
		}
		d, derr := mql.ToD(update)
		if derr != nil {
			return fmt.Errorf("update is a %T, neither a document of update operators nor an update pipeline: %s: %w", update, operatorsHint, ErrInvalidArgument)
		}
		err = checkOperators(d)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	return nil
}

const operatorsHint = `pass update operators such as bson.D{{Key: "$set", Value: bson.D{{Key: "field", Value: v}}}}`

func checkOperators(d bson.D) error {
	if len(d) == 0 {
		return errEmptyUpdate()
	}
	for _, e := range d {
		if !strings.HasPrefix(e.Key, "$") {
			return notOperator(e.Key)
		}
	}
	return nil
}

func checkOperatorMap(m map[string]any) error {
	if len(m) == 0 {
		return errEmptyUpdate()
	}
	for k := range m {
		if !strings.HasPrefix(k, "$") {
			return notOperator(k)
		}
	}
	return nil
}

func errEmptyUpdate() error {
	return errors.New("empty update document: " + operatorsHint)
}

func notOperator(k string) error {
	return fmt.Errorf(`update field %q is not an update operator: to change it pass bson.D{{Key: "$set", Value: bson.D{{Key: %q, Value: v}}}}; to replace the whole document use Save`, k, k)
}

// completeUpdate adds to update what the repository itself owes it: the
// version increment of a versioned model, so that a stale Save still
// conflicts, and for an upsert the equality conditions of the final filter
// as $setOnInsert fields. MongoDB copies those into the new document
// itself, but FerretDB 1.x does not copy those nested in $and (where
// And puts listeners' conditions), so the repository makes it so on every
// server. A field the update writes is left to the update, as MongoDB does.
// An update pipeline gets the version but no equalities: MongoDB copies
// them, and FerretDB has no update pipelines.
func (r *Repository[T]) completeUpdate(filter, update any, upsert bool) (any, error) {
	u, err := mql.ParseUpdate(update)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if vf := r.schema.Version; vf != nil && !u.Touches(vf.BSON) {
		if err := u.Add("$inc", vf.BSON, 1); err != nil {
			return nil, err
		}
	}
	if upsert && !u.IsPipeline() {
		eqs, err := mql.Equalities(filter)
		if err != nil {
			return nil, fmt.Errorf("upsert filter: %w", err)
		}
		seeded := map[string]any{}
		for _, eq := range eqs {
			if v, ok := seeded[eq.Key]; ok {
				if !reflect.DeepEqual(v, eq.Value) {
					return nil, fmt.Errorf("upsert filter wants %q equal to both %v and %v, so no document can be inserted: %w", eq.Key, v, eq.Value, ErrInvalidArgument)
				}
				continue
			}
			seeded[eq.Key] = eq.Value
			if u.Touches(eq.Key) {
				continue
			}
			if err := u.Add("$setOnInsert", eq.Key, eq.Value); err != nil {
				return nil, err
			}
		}
	}
	return u.Value(), nil
}
