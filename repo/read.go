package repo

import (
	"context"
	"fmt"
	"iter"

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
	var zero T
	pid, err := r.newModel().PrepareID(id)
	if err != nil {
		return zero, r.wrap("FindByID", fmt.Errorf("id %v: %w: %w", id, ErrInvalidArgument, err))
	}
	m, err := r.findOne(ctx, bson.D{{Key: "_id", Value: pid}}, opts)
	if err != nil {
		return zero, r.wrap("FindByID", err)
	}
	return m, nil
}

// FindOne returns the first model that matches filter (nil matches all),
// or an error wrapping ErrNotFound.
func (r *Repository[T]) FindOne(ctx context.Context, filter any, opts ...*options.FindOneOptions) (T, error) {
	m, err := r.findOne(ctx, orAll(filter), opts)
	if err != nil {
		var zero T
		return zero, r.wrap("FindOne", err)
	}
	return m, nil
}

func (r *Repository[T]) findOne(ctx context.Context, filter any, opts []*options.FindOneOptions) (T, error) {
	var zero T
	raw, err := r.coll.FindOne(ctx, filter, opts...).Raw()
	if err != nil {
		return zero, err
	}
	return r.decode(ctx, r.event(ctx, events.OpFind), raw)
}

func orAll(filter any) any {
	if filter == nil {
		return bson.D{}
	}
	return filter
}

// decode publishes AfterLoad, decodes the document as its listeners left
// it, and publishes AfterConvert.
func (r *Repository[T]) decode(ctx context.Context, e *events.Event, raw bson.Raw) (T, error) {
	var zero T
	if e != nil {
		e.Model, e.Document = nil, raw
		if err := r.publish(ctx, e, events.AfterLoad); err != nil {
			return zero, err
		}
		raw = e.Document
	}
	m := r.newModel()
	if err := bsonio.Unmarshal(r.reg, raw, m); err != nil {
		return zero, fmt.Errorf("decoding %v: %w", r.schema.Type, err)
	}
	if e != nil {
		e.Model = m
		if err := r.publish(ctx, e, events.AfterConvert); err != nil {
			return zero, err
		}
	}
	return m, nil
}

// Find returns every model that matches filter (nil matches all). For large
// results use Iter or All, which decode one document at a time.
func (r *Repository[T]) Find(ctx context.Context, filter any, opts ...*options.FindOptions) ([]T, error) {
	c, err := r.iter(ctx, filter, opts, "Find")
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	var out []T
	for c.Next(ctx) {
		out = append(out, c.Model())
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Iter returns a cursor over the models that match filter (nil matches
// all). Events fire for each document as the cursor reads it, not for all
// of them up front. Close it when done.
func (r *Repository[T]) Iter(ctx context.Context, filter any, opts ...*options.FindOptions) (*Cursor[T], error) {
	return r.iter(ctx, filter, opts, "Iter")
}

func (r *Repository[T]) iter(ctx context.Context, filter any, opts []*options.FindOptions, method string) (*Cursor[T], error) {
	cur, err := r.coll.Find(ctx, orAll(filter), opts...)
	if err != nil {
		return nil, r.wrap(method, err)
	}
	return &Cursor[T]{r: r, cur: cur, e: r.event(ctx, events.OpFind), method: method}, nil
}

// All iterates over the models that match filter, for use with range:
//
//	for u, err := range users.All(ctx, bson.M{"active": true}) { ... }
//
// An error ends the iteration after it is yielded.
func (r *Repository[T]) All(ctx context.Context, filter any, opts ...*options.FindOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		c, err := r.iter(ctx, filter, opts, "All")
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		defer c.Close(ctx)
		for c.Next(ctx) {
			if !yield(c.Model(), nil) {
				return
			}
		}
		if err := c.Err(); err != nil {
			var zero T
			yield(zero, err)
		}
	}
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

// Count returns the number of documents that match filter (nil matches
// all). It publishes no events.
func (r *Repository[T]) Count(ctx context.Context, filter any, opts ...*options.CountOptions) (int64, error) {
	n, err := r.coll.CountDocuments(ctx, orAll(filter), opts...)
	if err != nil {
		return 0, r.wrap("Count", err)
	}
	return n, nil
}

// Delete deletes m's document by its ID. Deleting a missing document is
// not an error; AfterDelete's DeletedCount is then 0.
func (r *Repository[T]) Delete(ctx context.Context, m T) error {
	if _, err := r.check(m, "Delete"); err != nil {
		return err
	}
	if err := beforeDelete(ctx, m); err != nil {
		return r.wrap("Delete", fmt.Errorf("model hook: %w", err))
	}
	filter := bson.D{{Key: "_id", Value: m.GetID()}}
	e := r.event(ctx, events.OpDelete)
	if e != nil {
		e.Model, e.Filter = m, filter
	}
	res, err := r.delete(ctx, e, filter, false)
	if err != nil {
		return r.wrap("Delete", err)
	}
	if err := afterDelete(ctx, m, res); err != nil {
		return r.wrap("Delete", fmt.Errorf("model hook after the delete: %w", err))
	}
	return nil
}

// DeleteMany deletes every document that matches filter and returns how
// many it deleted. A nil filter is refused; pass bson.D{} to delete all.
func (r *Repository[T]) DeleteMany(ctx context.Context, filter any) (int64, error) {
	if filter == nil {
		return 0, r.wrap("DeleteMany", fmt.Errorf("nil filter; pass bson.D{} to delete every document: %w", ErrInvalidArgument))
	}
	e := r.event(ctx, events.OpDeleteMany)
	if e != nil {
		e.Filter = filter
	}
	res, err := r.delete(ctx, e, filter, true)
	if err != nil {
		return 0, r.wrap("DeleteMany", err)
	}
	return res.DeletedCount, nil
}

func (r *Repository[T]) delete(ctx context.Context, e *events.Event, filter any, many bool) (*mongo.DeleteResult, error) {
	if err := r.publish(ctx, e, events.BeforeDelete); err != nil {
		return nil, err
	}
	if e != nil {
		filter = e.Filter
	}
	var res *mongo.DeleteResult
	var err error
	if many {
		res, err = r.coll.DeleteMany(ctx, filter)
	} else {
		res, err = r.coll.DeleteOne(ctx, filter)
	}
	if err != nil {
		return nil, err
	}
	if e != nil {
		e.DeletedCount = res.DeletedCount
		if err := r.publish(ctx, e, events.AfterDelete); err != nil {
			return res, err
		}
	}
	return res, nil
}
