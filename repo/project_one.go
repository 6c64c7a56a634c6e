package repo

import (
	"context"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// FindOneAs returns, as a D, the first document of r's collection that
// matches filter, or an error wrapping ErrNotFound; a nil filter is
// refused (pass bson.D{}). It reads as FindAs does: r's model's
// BeforeQuery and AfterLoad, so every policy confines the filter and
// decryption leaves the document D is decoded from, and a projection of
// D's keys plus what the policies need, which opts may not set. With
// interceptors it is one operation, "FindOneAs".
func FindOneAs[D any, T mgm.Model](ctx context.Context, r *Repository[T], filter any, opts ...*options.FindOneOptions) (D, error) {
	if r == nil {
		var zero D
		return zero, fmt.Errorf("repo: FindOneAs: nil repository: %w", ErrInvalidArgument)
	}
	if o := r.operation("FindOneAs", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (D, error) { return findOneAs[D](ctx, r, o, filter, opts) })
	}
	return findOneAs[D](ctx, r, nil, filter, opts)
}

func findOneAs[D any, T mgm.Model](ctx context.Context, r *Repository[T], o *events.Operation, filter any, opts []*options.FindOneOptions) (D, error) {
	var zero D
	if err := needFilter(filter); err != nil {
		return zero, r.wrap("FindOneAs", err)
	}
	proj, err := projectionFor[D](r.schema, "FindOneAs", opts, func(o *options.FindOneOptions) any { return o.Projection })
	if err != nil {
		return zero, r.wrap("FindOneAs", err)
	}
	if proj != nil {
		opts = append(opts[:len(opts):len(opts)], options.FindOne().SetProjection(proj))
	}
	e, raw, err := r.findOneRaw(ctx, filter, opts)
	if err != nil {
		return zero, r.wrap("FindOneAs", err)
	}
	d, err := loadAs[D](ctx, r, e, raw)
	if err != nil {
		return zero, r.wrap("FindOneAs", err)
	}
	if o != nil {
		o.Returned = 1
	}
	return d, nil
}

// FindPageAs returns one page, as values of D, of the documents of r's
// collection that match filter: FindPage's page (the same PageRequest,
// order, positions and count, confined by every policy as FindPage's is)
// read as FindAs reads, with r's model's AfterLoad and a projection of
// D's keys, plus what the policies need and the top-level fields of
// p.Sort, which the position after the page is made of. opts may not set
// a projection, a sort, a skip or a limit. With interceptors it is one
// operation, "FindPageAs".
func FindPageAs[D any, T mgm.Model](ctx context.Context, r *Repository[T], filter any, p PageRequest, opts ...*options.FindOptions) (*Page[D], error) {
	if r == nil {
		return nil, fmt.Errorf("repo: FindPageAs: nil repository: %w", ErrInvalidArgument)
	}
	if o := r.operation("FindPageAs", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*Page[D], error) { return findPageAs[D](ctx, r, o, filter, p, opts) })
	}
	return findPageAs[D](ctx, r, nil, filter, p, opts)
}

func findPageAs[D any, T mgm.Model](ctx context.Context, r *Repository[T], o *events.Operation, filter any, p PageRequest, opts []*options.FindOptions) (*Page[D], error) {
	proj, err := projectionFor[D](r.schema, "FindPageAs", opts, func(o *options.FindOptions) any { return o.Projection })
	if err != nil {
		return nil, r.wrap("FindPageAs", err)
	}
	how := pageRead[D]{method: "FindPageAs", proj: proj, load: func(ctx context.Context, e *events.Event, raw bson.Raw) (D, error) {
		return loadAs[D](ctx, r, e, raw)
	}}
	return readPage(ctx, r, o, how, filter, p, opts)
}
