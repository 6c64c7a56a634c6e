package repo

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// FindAs returns, as values of D, a struct type other than the model (a
// DTO with a subset of its fields), every document of r's collection that
// matches filter; a nil filter is refused (pass bson.D{}).
//
// It is a read of r's model, with its events: BeforeQuery, whose
// listeners (every policy: the tenant, soft delete, encryption's checks)
// confine the filter as they confine Find's, and for each document
// AfterLoad, whose listeners (encryption, which decrypts) leave the
// document that D is decoded from. AfterConvert, whose listeners are given
// a model, is not published: there is none.
//
// The repository sends a projection that leaves out the model's fields D
// does not read, each of D's keys being a field of the model, and keeps
// what the policies need to read the document: _id, every field a
// `policy` tag names, and the keys that are no field of the model (such
// as what a policy stores beside a field; encrypted fields are decrypted
// as for the model, so D declares them with their plaintext type). A D
// that reads every field, or has an inline map, reads whole documents.
// opts may not set a projection, which D sets; BeforeQuery's listeners see
// the one sent in Event.Projection. With
// interceptors it is one operation, "FindAs".
func FindAs[D any, T mgm.Model](ctx context.Context, r *Repository[T], filter any, opts ...*options.FindOptions) ([]D, error) {
	if r == nil {
		return nil, fmt.Errorf("repo: FindAs: nil repository: %w", ErrInvalidArgument)
	}
	if o := r.operation("FindAs", events.OpFind); o != nil {
		return intercept(ctx, r.bus, o, func(ctx context.Context) ([]D, error) { return findAs[D](ctx, r, o, filter, opts) })
	}
	return findAs[D](ctx, r, nil, filter, opts)
}

func findAs[D any, T mgm.Model](ctx context.Context, r *Repository[T], o *events.Operation, filter any, opts []*options.FindOptions) ([]D, error) {
	proj, err := projectionFor[D](r.schema, "FindAs", opts, func(o *options.FindOptions) any { return o.Projection })
	if err != nil {
		return nil, r.wrap("FindAs", err)
	}
	if proj != nil {
		opts = append(opts[:len(opts):len(opts)], options.Find().SetProjection(proj))
	}
	c, err := r.iter(ctx, filter, opts, "FindAs")
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	var out []D
	for c.cur.Next(ctx) {
		d, err := loadAs[D](ctx, r, c.e, c.cur.Current)
		if err != nil {
			return nil, r.wrap("FindAs", err)
		}
		out = append(out, d)
	}
	if err := c.cur.Err(); err != nil {
		return nil, r.wrap("FindAs", err)
	}
	if o != nil {
		o.Returned = int64(len(out))
	}
	return out, nil
}

// loadAs publishes AfterLoad for raw, a document of r's model, and
// decodes into a D the document its listeners leave.
func loadAs[D any, T mgm.Model](ctx context.Context, r *Repository[T], e *events.Event, raw bson.Raw) (D, error) {
	var d D
	raw, err := r.afterLoad(ctx, e, raw)
	if err != nil {
		return d, err
	}
	err = r.unmarshal(raw, &d)
	return d, err
}

// projectionFor returns the projection that reads D's fields of model s
// (nil: whole documents), and refuses opts of method that set one.
func projectionFor[D, O any](s *model.Schema, method string, opts []*O, projection func(*O) any) (bson.D, error) {
	d := reflect.TypeFor[D]()
	proj, err := projectionOf(s, d)
	if err != nil {
		return nil, err
	}
	for i, o := range opts {
		if o != nil && projection(o) != nil {
			return nil, fmt.Errorf("options %d set a projection, which %s sets from %v's fields: %w", i, method, d, ErrInvalidArgument)
		}
	}
	return proj, nil
}

var projections sync.Map // [2]reflect.Type{model, D} -> projected

type projected struct {
	proj bson.D // nil: whole documents
	err  error
}

// projectionOf returns the projection that reads D's fields of documents
// of model s, and what s's policies need; nil when D reads whole
// documents. It is computed once per model and D.
func projectionOf(s *model.Schema, d reflect.Type) (bson.D, error) {
	key := [2]reflect.Type{s.Type, d}
	if p, ok := projections.Load(key); ok {
		return p.(projected).proj, p.(projected).err
	}
	proj, err := buildProjection(s, d)
	p, _ := projections.LoadOrStore(key, projected{proj, err})
	return p.(projected).proj, p.(projected).err
}

func buildProjection(s *model.Schema, d reflect.Type) (bson.D, error) {
	if d.Kind() != reflect.Struct {
		return nil, fmt.Errorf("DTO %v: want a struct type to read %v's documents into: %w", d, s.Type, ErrInvalidArgument)
	}
	keys, all, err := model.KeysOf(d)
	if err != nil {
		return nil, err
	}
	if all {
		return nil, nil
	}
	reads := map[string]bool{"_id": true}
	for _, k := range keys {
		if s.FieldByBSON(k.BSON) == nil {
			return nil, fmt.Errorf("DTO %v: field %s reads key %q, which is no field of %v: %w", d, k.Name, k.BSON, s.Type, ErrInvalidArgument)
		}
		reads[k.BSON] = true
	}
	var proj bson.D // leaves out the model's fields D does not read
	for _, f := range s.Fields {
		if !reads[f.BSON] && s.PolicyOf(f.BSON) == nil {
			proj = append(proj, bson.E{Key: f.BSON, Value: 0})
		}
	}
	return proj, nil
}
