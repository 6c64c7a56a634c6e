package repo

import (
	"context"
	"fmt"
	"iter"
	"reflect"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// FindByID returns the model whose _id is id, after the model's PrepareID
// (for mgm's DefaultModel a hex string becomes an ObjectID). It returns an
// error wrapping ErrNotFound when there is none.
func (r *Repository[T]) FindByID(ctx context.Context, id any, opts ...*options.FindOneOptions) (T, error) {
	if o := r.operation("FindByID", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (T, error) { return r.findByID(ctx, o, id, opts) })
	}
	return r.findByID(ctx, nil, id, opts)
}

func (r *Repository[T]) findByID(ctx context.Context, o *events.Operation, id any, opts []*options.FindOneOptions) (T, error) {
	var zero T
	pid, err := r.newModel().PrepareID(id)
	if err != nil {
		return zero, r.wrap("FindByID", fmt.Errorf("id %v: %w: %w", id, ErrInvalidArgument, err))
	}
	m, err := r.findOne(ctx, o, bson.D{{Key: "_id", Value: pid}}, opts)
	if err != nil {
		return zero, r.wrap("FindByID", err)
	}
	return m, nil
}

// FindOne returns the first model that matches filter, or an error
// wrapping ErrNotFound. A nil filter is refused: pass bson.D{} to match
// every document.
func (r *Repository[T]) FindOne(ctx context.Context, filter any, opts ...*options.FindOneOptions) (T, error) {
	if o := r.operation("FindOne", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (T, error) { return r.findFirst(ctx, o, filter, opts) })
	}
	return r.findFirst(ctx, nil, filter, opts)
}

func (r *Repository[T]) findFirst(ctx context.Context, o *events.Operation, filter any, opts []*options.FindOneOptions) (T, error) {
	var zero T
	if err := needFilter(filter); err != nil {
		return zero, r.wrap("FindOne", err)
	}
	m, err := r.findOne(ctx, o, filter, opts)
	if err != nil {
		return zero, r.wrap("FindOne", err)
	}
	return m, nil
}

func (r *Repository[T]) findOne(ctx context.Context, o *events.Operation, filter any, opts []*options.FindOneOptions) (T, error) {
	var zero T
	e, raw, err := r.findOneRaw(ctx, filter, opts)
	if err != nil {
		return zero, err
	}
	m, err := r.decode(ctx, e, raw)
	if err == nil && o != nil {
		o.Returned = 1
	}
	return m, err
}

// findOneRaw publishes BeforeQuery for filter and returns the event and
// the first document that matches the filter its listeners leave, not yet
// loaded (AfterLoad is the caller's).
func (r *Repository[T]) findOneRaw(ctx context.Context, filter any, opts []*options.FindOneOptions) (*events.Event, bson.Raw, error) {
	opts = ownOptions(opts)
	e := r.event(ctx, events.OpFind)
	describe(e, opts, func(o *options.FindOneOptions) any { return o.Sort },
		func(o *options.FindOneOptions) any { return o.Projection },
		func(o *options.FindOneOptions) *options.Collation { return o.Collation })
	filter, err := r.query(ctx, e, filter)
	if err != nil {
		return nil, nil, err
	}
	raw, err := r.coll.FindOne(ctx, filter, opts...).Raw()
	if err != nil {
		return nil, nil, err
	}
	return e, raw, nil
}

// decode publishes AfterLoad, decodes the document as its listeners left
// it, and publishes AfterConvert.
func (r *Repository[T]) decode(ctx context.Context, e *events.Event, raw bson.Raw) (T, error) {
	var zero T
	raw, err := r.afterLoad(ctx, e, raw)
	if err != nil {
		return zero, err
	}
	m := r.newModel()
	if err := r.unmarshal(raw, m); err != nil {
		return zero, err
	}
	if e != nil {
		e.Model = m
		if err := r.publish(ctx, e, events.AfterConvert); err != nil {
			return zero, err
		}
	}
	return m, nil
}

// afterLoad publishes AfterLoad for raw and returns the document as its
// listeners left it.
func (r *Repository[T]) afterLoad(ctx context.Context, e *events.Event, raw bson.Raw) (bson.Raw, error) {
	if e == nil {
		return raw, nil
	}
	e.Model, e.Document = nil, raw
	if err := r.publish(ctx, e, events.AfterLoad); err != nil {
		return nil, err
	}
	return e.Document, nil
}

// unmarshal decodes raw into v with the repository's registry; an error
// names v's type and the document's _id.
func (r *Repository[T]) unmarshal(raw bson.Raw, v any) error {
	if err := bsonio.Unmarshal(r.reg, raw, v); err != nil {
		return decodeError(reflect.TypeOf(v), raw, err)
	}
	return nil
}

// Find returns every model that matches filter; a nil filter is refused
// (pass bson.D{} for every model). For large results use Iter or All,
// which decode one document at a time.
func (r *Repository[T]) Find(ctx context.Context, filter any, opts ...*options.FindOptions) ([]T, error) {
	if o := r.operation("Find", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) ([]T, error) { return r.find(ctx, o, filter, opts) })
	}
	return r.find(ctx, nil, filter, opts)
}

func (r *Repository[T]) find(ctx context.Context, o *events.Operation, filter any, opts []*options.FindOptions) ([]T, error) {
	c, err := r.iter(ctx, filter, opts, "Find")
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	var out []T
	for c.Next(ctx) {
		out = append(out, c.Model())
	}
	if o != nil {
		o.Returned = int64(len(out))
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Iter returns a cursor over the models that match filter (a nil filter
// is refused; pass bson.D{} for every model). Events fire for each
// document as the cursor reads it, not for all of them up front. Close it
// when done.
// With interceptors, the operation ends when Iter returns: what Next reads
// later is not counted in it.
func (r *Repository[T]) Iter(ctx context.Context, filter any, opts ...*options.FindOptions) (*Cursor[T], error) {
	if o := r.operation("Iter", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*Cursor[T], error) { return r.iter(ctx, filter, opts, "Iter") })
	}
	return r.iter(ctx, filter, opts, "Iter")
}

func (r *Repository[T]) iter(ctx context.Context, filter any, opts []*options.FindOptions, method string) (*Cursor[T], error) {
	opts = ownOptions(opts)
	if err := needFilter(filter); err != nil {
		return nil, r.wrap(method, err)
	}
	e := r.event(ctx, events.OpFind)
	describe(e, opts, func(o *options.FindOptions) any { return o.Sort },
		func(o *options.FindOptions) any { return o.Projection },
		func(o *options.FindOptions) *options.Collation { return o.Collation })
	filter, err := r.query(ctx, e, filter)
	if err != nil {
		return nil, r.wrap(method, err)
	}
	cur, err := r.coll.Find(ctx, filter, opts...)
	if err != nil {
		return nil, r.wrap(method, err)
	}
	return &Cursor[T]{r: r, cur: cur, e: e, method: method}, nil
}

// All iterates over the models that match filter (a nil filter is
// refused; pass bson.D{} for every model), for use with range:
//
//	for u, err := range users.All(ctx, bson.M{"active": true}) { ... }
//
// An error ends the iteration after it is yielded. With interceptors, the
// operation lasts the whole iteration: the loop's body runs inside it.
func (r *Repository[T]) All(ctx context.Context, filter any, opts ...*options.FindOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		if o := r.operation("All", events.OpFind); o != nil {
			_ = r.bus.Intercept(ctx, o, func(ctx context.Context) error { return r.all(ctx, o, filter, opts, yield) })
			return
		}
		_ = r.all(ctx, nil, filter, opts, yield)
	}
}

// all yields the models of All, and returns the error it yielded last.
func (r *Repository[T]) all(ctx context.Context, o *events.Operation, filter any, opts []*options.FindOptions, yield func(T, error) bool) error {
	var zero T
	c, err := r.iter(ctx, filter, opts, "All")
	if err != nil {
		yield(zero, err)
		return err
	}
	defer c.Close(ctx)
	for c.Next(ctx) {
		if o != nil {
			o.Returned++
		}
		if !yield(c.Model(), nil) {
			return nil
		}
	}
	if err := c.Err(); err != nil {
		yield(zero, err)
		return err
	}
	return nil
}

// Cursor streams models from a query, decoding and publishing events for
// one document per Next.
type Cursor[T mgm.Model] struct {
	r      *Repository[T]
	cur    *mongo.Cursor
	e      *events.Event
	m      T
	err    error
	method string
}

// Next reads and decodes the next document, and reports whether there was
// one. After it returns false, check Err.
func (c *Cursor[T]) Next(ctx context.Context) bool {
	if c.err != nil || !c.cur.Next(ctx) {
		return false
	}
	c.m, c.err = c.r.decode(ctx, c.e, c.cur.Current)
	return c.err == nil
}

// Model returns the model Next decoded.
func (c *Cursor[T]) Model() T { return c.m }

// Err returns the first error of the cursor or of a listener.
func (c *Cursor[T]) Err() error {
	err := c.err
	if err == nil {
		err = c.cur.Err()
	}
	if err != nil {
		return c.r.wrap(c.method, err)
	}
	return nil
}

// Close closes the server cursor.
func (c *Cursor[T]) Close(ctx context.Context) error { return c.cur.Close(ctx) }

// Count returns the number of documents that match filter, after
// BeforeQuery. A nil filter is refused: pass bson.D{} to count every
// document.
func (r *Repository[T]) Count(ctx context.Context, filter any, opts ...*options.CountOptions) (int64, error) {
	if o := r.operation("Count", events.OpCount); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (int64, error) { return r.count(ctx, filter, opts) })
	}
	return r.count(ctx, filter, opts)
}

func (r *Repository[T]) count(ctx context.Context, filter any, opts []*options.CountOptions) (int64, error) {
	opts = ownOptions(opts)
	if err := needFilter(filter); err != nil {
		return 0, r.wrap("Count", err)
	}
	e := r.event(ctx, events.OpCount)
	describe(e, opts, nil, nil, func(o *options.CountOptions) *options.Collation { return o.Collation })
	filter, err := r.query(ctx, e, filter)
	if err != nil {
		return 0, r.wrap("Count", err)
	}
	n, err := r.coll.CountDocuments(ctx, filter, opts...)
	if err != nil {
		return 0, r.wrap("Count", err)
	}
	return n, nil
}

// Distinct returns the distinct values of field among the documents that
// match filter, after BeforeQuery, whose event carries the field in
// Event.Field. A nil filter is refused: pass bson.D{} for every document.
func (r *Repository[T]) Distinct(ctx context.Context, field string, filter any, opts ...*options.DistinctOptions) ([]any, error) {
	if o := r.operation("Distinct", events.OpDistinct); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) ([]any, error) { return r.distinct(ctx, o, field, filter, opts) })
	}
	return r.distinct(ctx, nil, field, filter, opts)
}

func (r *Repository[T]) distinct(ctx context.Context, o *events.Operation, field string, filter any, opts []*options.DistinctOptions) ([]any, error) {
	opts = ownOptions(opts)
	if field == "" {
		return nil, r.wrap("Distinct", fmt.Errorf("empty field name: %w", ErrInvalidArgument))
	}
	if err := needFilter(filter); err != nil {
		return nil, r.wrap("Distinct", err)
	}
	e := r.event(ctx, events.OpDistinct)
	if e != nil {
		e.Field = field
	}
	describe(e, opts, nil, nil, func(o *options.DistinctOptions) *options.Collation { return o.Collation })
	filter, err := r.query(ctx, e, filter)
	if err != nil {
		return nil, r.wrap("Distinct", err)
	}
	vals, err := r.coll.Distinct(ctx, field, filter, opts...)
	if err != nil {
		return nil, r.wrap("Distinct", err)
	}
	if o != nil {
		o.Returned = int64(len(vals))
	}
	return vals, nil
}

// decodeError says which document of which type failed to decode.
func decodeError(t reflect.Type, raw bson.Raw, err error) error {
	if id, lerr := raw.LookupErr("_id"); lerr == nil {
		return fmt.Errorf("decoding %v, document _id %v: %w", t, id, err)
	}
	return fmt.Errorf("decoding %v, a document without _id: %w", t, err)
}
