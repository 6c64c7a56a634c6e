package autokeys_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// Parcel is numbered per region, a field a policy (of the application's
// own, "region") sets.
type Parcel struct {
	mgm.DefaultModel `bson:",inline"`
	Region           string `bson:"region" policy:"region"`
	No               int64  `bson:"no" auto:"inc,scope=region"`
}

// regionSource fills the region field from the context, as a policy that
// stamps it would: the region the context names, which the model must
// match.
type regionSource struct{}

type regionKey struct{}

func (regionSource) FillsScope(s *model.Schema, f *model.Field) bool {
	p := s.PolicyOf(f.BSON)
	return p != nil && p.Policy == "region"
}

func (regionSource) ScopeValue(ctx context.Context, _ *model.Schema, f *model.Field, named reflect.Value) (reflect.Value, error) {
	region, _ := ctx.Value(regionKey{}).(string)
	switch {
	case region == "":
		return reflect.Value{}, errors.New("no region in the context")
	case named.String() != "" && named.String() != region:
		return reflect.Value{}, errors.New("another region")
	}
	return reflect.ValueOf(region).Convert(f.Type), nil
}

// TestScopeFieldOfAPolicy: a scope field that a policy tag names is
// refused at repo.New unless a ScopeSource fills it, whatever the policy
// (model knows none by name); with one, the number is scoped by the value
// the source gives, before the policy would stamp the field, and what the
// source refuses is refused before a number is taken.
func TestScopeFieldOfAPolicy(t *testing.T) {
	db := srv.PooledDatabase(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	_, err = repo.New[*Parcel](bus, repo.WithDatabase(db), repo.Unenforced("region"))
	require.ErrorIs(t, err, sequence.ErrInvalidArgument)
	assert.ErrorContains(t, err, "Parcel field No `auto:\"inc,scope=region\"`: scope field Region is a `policy:\"region\"` field")
	assert.ErrorContains(t, err, "autokeys.WithScopeSource")

	db = srv.PooledDatabase(t)
	keys, err = autokeys.New(db, autokeys.WithScopeSource(regionSource{}))
	require.NoError(t, err)
	bus = events.NewBus()
	bus.Register(keys)
	parcels, err := repo.New[*Parcel](bus, repo.WithDatabase(db), repo.Unenforced("region"))
	require.NoError(t, err)
	eu := context.WithValue(ctx, regionKey{}, "eu")
	for want := range int64(2) {
		p := &Parcel{Region: "eu"}
		require.NoError(t, parcels.Insert(eu, p))
		assert.Equal(t, want+1, p.No)
	}
	err = parcels.Insert(ctx, &Parcel{Region: "eu"})
	require.ErrorContains(t, err, "Parcel field No is numbered per region: no region in the context", "refused by the source")
	require.Error(t, parcels.Insert(eu, &Parcel{Region: "us"}), "the source refuses another region")
	p := &Parcel{Region: "us"}
	require.NoError(t, parcels.Insert(context.WithValue(ctx, regionKey{}, "us"), p))
	assert.Equal(t, int64(1), p.No, "us counts on its own")
	n, err := db.Collection("parcels").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(3), n, "nothing refused was stored")
}
