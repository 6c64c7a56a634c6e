package repo

import (
	"context"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Aggregate runs pipeline (mongo.Pipeline, []bson.D, bson.A, ...; nil is
// empty) on the collection and stores the results in results, a pointer to
// a slice, replacing its contents as cursor.All does.
//
// It publishes BeforeQuery with Event.Pipeline, which listeners may
// replace (to add a leading $match, say), and then, for each result,
// AfterLoad. Results decoded into T, or into T's struct type, also get
// AfterConvert, as a find's do. Results of any other type get AfterLoad
// only, since they are not models.
//
// It refuses AggregateOptions.Custom with ErrInvalidArgument, before
// anything is published or sent: the driver copies its raw fields into
// the command unread, where a collation, a read concern or a second
// pipeline would pass every policy.
func (r *Repository[T]) Aggregate(ctx context.Context, pipeline any, results any, opts ...*options.AggregateOptions) error {
	if o := r.operation("Aggregate", events.OpAggregate); o != nil {
		return r.bus.Intercept(ctx, o, func(ctx context.Context) error { return r.aggregate(ctx, o, pipeline, results, opts) })
	}
	return r.aggregate(ctx, nil, pipeline, results, opts)
}

func (r *Repository[T]) aggregate(ctx context.Context, o *events.Operation, pipeline any, results any, opts []*options.AggregateOptions) error {
	opts = ownOptions(opts)
	const method = "Aggregate"
	rv := reflect.ValueOf(results)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Slice {
		return r.wrap(method, fmt.Errorf("results is %T; want a non-nil pointer to a slice, such as *[]%v: %w", results, r.schema.Type, ErrInvalidArgument))
	}
	if err := refuseAggregateCustom(opts); err != nil {
		return r.wrap(method, err)
	}
	e := r.event(ctx, events.OpAggregate)
	describe(e, opts, nil, nil, func(o *options.AggregateOptions) *options.Collation { return o.Collation })
	pipeline, err := r.pipelineQuery(ctx, e, pipeline)
	if err != nil {
		return r.wrap(method, err)
	}
	cur, err := r.coll.Aggregate(ctx, pipeline, opts...)
	if err != nil {
		return r.wrap(method, err)
	}
	defer cur.Close(ctx)
	sv := rv.Elem()
	et := sv.Type().Elem()
	out := reflect.MakeSlice(sv.Type(), 0, 0)
	for cur.Next(ctx) {
		var v reflect.Value
		switch et {
		case r.schema.Type, r.schema.Struct:
			m, err := r.decode(ctx, e, cur.Current)
			if err != nil {
				return r.wrap(method, err)
			}
			if v = reflect.ValueOf(m); et == r.schema.Struct {
				v = v.Elem()
			}
		default:
			raw, err := r.afterLoad(ctx, e, cur.Current)
			if err != nil {
				return err
			}
			p := reflect.New(et)
			if err := r.unmarshal(raw, p.Interface()); err != nil {
				return r.wrap(method, err)
			}
			v = p.Elem()
		}
		out = reflect.Append(out, v)
	}
	if err := cur.Err(); err != nil {
		return r.wrap(method, err)
	}
	sv.Set(out)
	if o != nil {
		o.Returned = int64(out.Len())
	}
	return nil
}
