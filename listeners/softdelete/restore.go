package softdelete

import (
	"context"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Restorer is what Restore needs of a repository: a *repo.Repository[T]
// has it.
type Restorer[T any] interface {
	UpdateMany(ctx context.Context, filter, update any, opts ...*options.UpdateOptions) (*mongo.UpdateResult, error)
	FindByID(ctx context.Context, id any, opts ...*options.FindOneOptions) (T, error)
}

// Restore brings back the soft-deleted documents of r that filter
// matches: it unsets every softdelete field (at, and by) of those that
// are marked, with an UpdateMany of r under WithDeleted, so that the
// update's events are published, its auditing and version follow, and
// every other policy (tenancy) confines it as any update. It returns how
// many documents it restored. A nil filter is refused, as UpdateMany
// refuses one: bson.D{} restores every marked document.
func Restore[T any](ctx context.Context, r Restorer[T], filter any) (int64, error) {
	at, unset, err := restoring[T]()
	if err != nil {
		return 0, err
	}
	if filter == nil {
		return 0, fmt.Errorf("softdelete: Restore of %v: nil filter; pass bson.D{} to restore every marked document", reflect.TypeFor[T]())
	}
	marked := bson.E{Key: at.BSON, Value: bson.D{{Key: "$ne", Value: nil}}}
	if at.Type.Kind() != reflect.Pointer {
		marked.Value = bson.D{{Key: "$nin", Value: bson.A{nil, reflect.Zero(at.Type).Interface()}}}
	}
	res, err := r.UpdateMany(WithDeleted(ctx), mql.And(filter, marked), bson.D{{Key: "$unset", Value: unset}})
	if err != nil {
		return 0, err
	}
	return res.ModifiedCount, nil
}

// RestoreModel restores m's document (see Restore) and brings m up to
// date with it, version and audit fields included, so that a later Save
// of m finds it. It is no error when m's document is not marked.
func RestoreModel[T interface{ GetID() any }](ctx context.Context, r Restorer[T], m T) error {
	if _, err := Restore(ctx, r, bson.D{{Key: "_id", Value: m.GetID()}}); err != nil {
		return err
	}
	fresh, err := r.FindByID(ctx, m.GetID())
	if err != nil {
		return err
	}
	reflect.ValueOf(m).Elem().Set(reflect.ValueOf(fresh).Elem())
	return nil
}

// restoring returns T's policy:"softdelete,at" field and the $unset of every
// softdelete field, or an error when T has none.
func restoring[T any]() (*model.Field, bson.D, error) {
	s, err := model.For[T]()
	if err != nil {
		return nil, nil, err
	}
	m, ok, err := marksOf(s)
	switch {
	case err != nil:
		return nil, nil, err
	case !ok:
		return nil, nil, fmt.Errorf("softdelete: %v has no policy:\"softdelete,at\" field, so nothing of it is soft-deleted", s.Type)
	}
	unset := bson.D{}
	for _, name := range m.names() {
		unset = append(unset, bson.E{Key: name, Value: ""})
	}
	return m.at, unset, nil
}
