// Written by hand: a review of the v2 line's option Listers, which a
// caller writes and the v1 line has no counterpart of.

package repo_test

import (
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/mongov2/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var errLister = errors.New("the caller's setter fails")

// failing is a caller's Lister whose one setter returns an error.
type failing[T any] struct{}

func (failing[T]) List() []func(*T) error {
	return []func(*T) error{func(*T) error { return errLister }}
}

// TestListerErrorIsReturned: a Lister whose setter fails makes every
// repository method return that error, wrapped in ErrInvalidArgument
// after the method's name, without a panic and without reaching the
// server.
func TestListerErrorIsReturned(t *testing.T) {
	_, r, db := setup[*listed](t, nil)
	require.NoError(t, r.Insert(ctx, &listed{N: 1}))
	check := func(name string, call func() error) {
		t.Helper()
		var err error
		require.NotPanics(t, func() { err = call() }, name)
		assert.ErrorIs(t, err, errLister, name)
		assert.ErrorIs(t, err, repo.ErrInvalidArgument, name)
		assert.ErrorContains(t, err, name+":", name)
	}
	check("FindByID", func() error {
		_, err := r.FindByID(ctx, bson.NewObjectID(), failing[options.FindOneOptions]{})
		return err
	})
	check("FindOne", func() error { _, err := r.FindOne(ctx, bson.D{}, failing[options.FindOneOptions]{}); return err })
	check("Find", func() error { _, err := r.Find(ctx, bson.D{}, failing[options.FindOptions]{}); return err })
	check("Iter", func() error { _, err := r.Iter(ctx, bson.D{}, failing[options.FindOptions]{}); return err })
	check("All", func() error {
		for _, err := range r.All(ctx, bson.D{}, failing[options.FindOptions]{}) {
			return err
		}
		return nil
	})
	check("Count", func() error { _, err := r.Count(ctx, bson.D{}, failing[options.CountOptions]{}); return err })
	check("Distinct", func() error { _, err := r.Distinct(ctx, "n", bson.D{}, failing[options.DistinctOptions]{}); return err })
	check("Aggregate", func() error {
		var out []bson.M
		return r.Aggregate(ctx, bson.A{}, &out, failing[options.AggregateOptions]{})
	})
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 2}}}}
	check("UpdateOne", func() error {
		_, err := r.UpdateOne(ctx, bson.D{}, set, failing[options.UpdateOneOptions]{})
		return err
	})
	check("UpdateMany", func() error {
		_, err := r.UpdateMany(ctx, bson.D{}, set, failing[options.UpdateManyOptions]{})
		return err
	})
	check("FindOneAndUpdate", func() error {
		_, err := r.FindOneAndUpdate(ctx, bson.D{}, set, failing[options.FindOneAndUpdateOptions]{})
		return err
	})
	check("ReplaceOne", func() error {
		_, err := r.ReplaceOne(ctx, bson.D{}, &listed{N: 3}, failing[options.ReplaceOptions]{})
		return err
	})
	check("FindOneAndReplace", func() error {
		_, err := r.FindOneAndReplace(ctx, bson.D{}, &listed{N: 3}, failing[options.FindOneAndReplaceOptions]{})
		return err
	})
	check("FindOneAndDelete", func() error {
		_, err := r.FindOneAndDelete(ctx, bson.D{}, failing[options.FindOneAndDeleteOptions]{})
		return err
	})
	check("BulkWrite", func() error {
		_, err := r.BulkWrite(ctx, []mongo.WriteModel{mongo.NewDeleteManyModel().SetFilter(bson.D{})}, failing[options.BulkWriteOptions]{})
		return err
	})
	check("Watch", func() error { _, err := r.Watch(ctx, bson.A{}, failing[options.ChangeStreamOptions]{}); return err })
	n, err := db.Collection("listeds").CountDocuments(ctx, bson.D{{Key: "n", Value: 1}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "no write reached the server")
}

// panicking is a caller's Lister whose List panics; a typed nil of a
// non-pointer kind (a nil func) does when its List calls it.
type panicking func() []func(*options.FindOptions) error

func (p panicking) List() []func(*options.FindOptions) error { return p() }

// TestListerPanicIsAnError: a caller's Lister that panics, in List or in a
// setter, gets an error from the repository (ErrInvalidArgument), not a
// panic through it.
func TestListerPanicIsAnError(t *testing.T) {
	_, r, _ := setup[*listed](t, nil)
	var nilFunc panicking
	setterPanics := panicking(func() []func(*options.FindOptions) error {
		return []func(*options.FindOptions) error{func(*options.FindOptions) error { panic("setter") }}
	})
	for name, l := range map[string]options.Lister[options.FindOptions]{"typed nil func": nilFunc, "setter": setterPanics} {
		var err error
		require.NotPanics(t, func() { _, err = r.Find(ctx, bson.D{}, l) }, name)
		assert.ErrorContains(t, err, "panicked", name)
		assert.ErrorIs(t, err, repo.ErrInvalidArgument, name)
	}
}
