package repo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// PageRequest asks FindPage for one page of a query's models, as Spring
// Data's Pageable and ScrollPosition do: by offset (Offset) or by keyset
// (After, the position after the last model of the page before).
type PageRequest struct {
	// Size is the number of models per page; it must be positive.
	Size int
	// Sort is the order of the models, fields with 1 (ascending) or -1
	// (descending). FindPage appends _id ascending when Sort does not
	// name it, so that the order is total and stable from page to page;
	// fields after _id are dropped, since _id decides. Keyset paging
	// compares a field's values as the server does within one BSON type,
	// so its sort fields should hold one type each (or be missing, which
	// sorts as null); a page whose last document holds an array in a sort
	// field fails with ErrInvalidArgument, since no position can follow
	// the server's order of arrays.
	Sort bson.D
	// Offset skips that many models (offset paging). The server still
	// reads what it skips: for deep pages use After.
	Offset int64
	// After is Page.Next of the page before (keyset paging): the page
	// holds the models that come after that page's last one in Sort's
	// order. A position is made for one Sort, and refused with another.
	// It may not be set with Offset.
	After string
	// Count asks for Page.Total, counted through Count's path.
	Count bool
}

// Page is one page of models (Spring Data's Page, or Slice without
// Count).
type Page[T any] struct {
	// Models are the page's models (FindPageAs: its DTOs), in order: at
	// most Size of them.
	Models []T
	// More reports whether models follow this page.
	More bool
	// Next is the position after the page's last model, for
	// PageRequest.After, when More; "" otherwise. It holds, readably,
	// that model's sort values as stored and the sort it was made for:
	// hand it to a client only if the client may see those fields.
	Next string
	// Total is the number of models that filter matches on every page
	// together when PageRequest.Count asked, and -1 otherwise.
	Total int64
}

// FindPage returns one page of the models that match filter, in the
// order of p.Sort with _id as the tiebreaker, and the total count when p
// asks. The page is read through Find's path, so BeforeQuery's listeners
// (every policy: the tenant, soft delete) confine its filter, keyset
// condition included, and each model is loaded as Find loads it
// (AfterLoad, decryption, AfterConvert); the count goes through Count's
// path, confined likewise. The one model read beyond the page to learn
// More is not decoded and publishes no AfterLoad. A nil filter is refused
// (pass bson.D{}); so are opts that set a sort, a skip or a limit, which
// p sets. With interceptors it is one operation, "FindPage".
func (r *Repository[T]) FindPage(ctx context.Context, filter any, p PageRequest, opts ...*options.FindOptions) (*Page[T], error) {
	if o := r.operation("FindPage", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) (*Page[T], error) { return r.findPage(ctx, o, filter, p, opts) })
	}
	return r.findPage(ctx, nil, filter, p, opts)
}

func (r *Repository[T]) findPage(ctx context.Context, o *events.Operation, filter any, p PageRequest, opts []*options.FindOptions) (*Page[T], error) {
	return readPage(ctx, r, o, pageRead[T]{method: "FindPage", load: r.decode}, filter, p, opts)
}

// pageRead says how readPage reads a page's documents: the method it is
// for, the projection it sends (nil: the caller's), and load, which
// turns each document into the page's values.
type pageRead[V any] struct {
	method string
	proj   bson.D
	load   func(context.Context, *events.Event, bson.Raw) (V, error)
}

// readPage returns one page of the documents of r that match filter,
// each loaded by how.load, and the count when p asks.
func readPage[V any, T mgm.Model](ctx context.Context, r *Repository[T], o *events.Operation, how pageRead[V], filter any, p PageRequest, opts []*options.FindOptions) (*Page[V], error) {
	opts = ownOptions(opts)
	if err := needFilter(filter); err != nil {
		return nil, r.wrap(how.method, err)
	}
	sort, find, err := pageOptions(p, opts)
	if err != nil {
		return nil, r.wrap(how.method, err)
	}
	if how.proj != nil {
		find.SetProjection(withSortFields(how.proj, sort))
	}
	query := filter
	if p.After != "" {
		after, err := decodePosition(p.After, sort)
		if err != nil {
			return nil, r.wrap(how.method, err)
		}
		query = mql.And(filter, bson.E{Key: "$or", Value: keysetOr(sort, after)})
	}
	c, err := r.iter(ctx, query, append(opts, find), how.method)
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	page := &Page[V]{Total: -1}
	for err == nil && len(page.Models) < p.Size && c.cur.Next(ctx) {
		var v V
		if v, err = how.load(ctx, c.e, c.cur.Current); err != nil {
			break
		}
		page.Models = append(page.Models, v)
		if len(page.Models) == p.Size {
			page.Next, err = position(sort, c.cur.Current, find.Projection != nil || projects(opts))
		}
	}
	if err == nil && len(page.Models) == p.Size && c.cur.Next(ctx) {
		page.More = true
	}
	if err == nil {
		err = c.cur.Err()
	}
	if err != nil {
		return nil, r.wrap(how.method, err)
	}
	if !page.More {
		page.Next = ""
	}
	if o != nil {
		o.Returned = int64(len(page.Models))
	}
	if p.Count {
		if page.Total, err = r.count(ctx, filter, countOptions(opts)); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// withSortFields returns proj, an exclusion projection (the one
// FindPageAs sends: it leaves out the model's fields the DTO lacks),
// without its exclusions of the top-level field of each sort key, so that
// the page's last document holds its position.
func withSortFields(proj, sort bson.D) bson.D {
	tops := make([]string, 0, len(sort))
	for _, e := range sort {
		top, _, _ := strings.Cut(e.Key, ".")
		tops = append(tops, top)
	}
	return slices.DeleteFunc(append(bson.D(nil), proj...), func(p bson.E) bool { return slices.Contains(tops, p.Key) })
}

// pageOptions checks p and opts, and returns the total order and the
// options that set it, with the skip and the limit (one model more than
// the page, to learn whether more follow).
func pageOptions(p PageRequest, opts []*options.FindOptions) (bson.D, *options.FindOptions, error) {
	switch {
	case p.Size <= 0:
		return nil, nil, fmt.Errorf("PageRequest.Size %d: want a positive size: %w", p.Size, ErrInvalidArgument)
	case p.Offset < 0:
		return nil, nil, fmt.Errorf("PageRequest.Offset %d: want 0 or more: %w", p.Offset, ErrInvalidArgument)
	case p.Offset > 0 && p.After != "":
		return nil, nil, fmt.Errorf("PageRequest sets both Offset and After: page by one or the other: %w", ErrInvalidArgument)
	}
	for i, o := range opts {
		if o != nil && (o.Sort != nil || o.Skip != nil || o.Limit != nil) {
			return nil, nil, fmt.Errorf("options %d set a sort, a skip or a limit, which the PageRequest sets: use PageRequest.Sort, Offset and Size: %w", i, ErrInvalidArgument)
		}
	}
	sort, err := totalOrder(p.Sort)
	if err != nil {
		return nil, nil, err
	}
	find := options.Find().SetSort(sort).SetLimit(int64(p.Size) + 1)
	if p.Offset > 0 {
		find.SetSkip(p.Offset)
	}
	return sort, find, nil
}

// totalOrder checks sort and returns it up to _id, with _id ascending
// appended when it is not there.
func totalOrder(sort bson.D) (bson.D, error) {
	out := make(bson.D, 0, len(sort)+1)
	for _, e := range sort {
		if e.Key == "" || strings.HasPrefix(e.Key, "$") || strings.Contains(e.Key, "..") {
			return nil, fmt.Errorf("PageRequest.Sort field %q: want a field name: %w", e.Key, ErrInvalidArgument)
		}
		dir, ok := direction(e.Value)
		if !ok {
			return nil, fmt.Errorf("PageRequest.Sort field %q: direction %v: want 1 or -1: %w", e.Key, e.Value, ErrInvalidArgument)
		}
		for _, prev := range out {
			if prev.Key == e.Key {
				return nil, fmt.Errorf("PageRequest.Sort names field %q twice: %w", e.Key, ErrInvalidArgument)
			}
		}
		out = append(out, bson.E{Key: e.Key, Value: dir})
		if e.Key == "_id" {
			return out, nil
		}
	}
	return append(out, bson.E{Key: "_id", Value: int32(1)}), nil
}

func direction(v any) (int32, bool) {
	var n int64
	switch d := v.(type) {
	case int:
		n = int64(d)
	case int32:
		n = int64(d)
	case int64:
		n = d
	case float64:
		if d != float64(int64(d)) {
			return 0, false
		}
		n = int64(d)
	default:
		return 0, false
	}
	if n != 1 && n != -1 {
		return 0, false
	}
	return int32(n), true
}

// projects reports whether opts set a projection.
func projects(opts []*options.FindOptions) bool {
	for _, o := range opts {
		if o != nil && o.Projection != nil {
			return true
		}
	}
	return false
}

// countOptions carries the collation of opts over to the count, so that
// it counts what the find matches.
func countOptions(opts []*options.FindOptions) []*options.CountOptions {
	var c *options.CountOptions
	for _, o := range opts {
		if o != nil && o.Collation != nil {
			c = options.Count().SetCollation(o.Collation)
		}
	}
	if c == nil {
		return nil
	}
	return []*options.CountOptions{c}
}
