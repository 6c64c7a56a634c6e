package repo_test

import (
	"context"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// regionPolicy is an application's own policy, named "region", which
// binds fields with policy:"region". The core knows no such name.
type regionPolicy struct{}

func (regionPolicy) HandleEvent(context.Context, *events.Event) error { return nil }
func (regionPolicy) EnforcesPolicy()                                  {}
func (regionPolicy) EnforcesTags() []string                           { return []string{"region"} }

type (
	// regionKeyed binds its field with the policy's name as a tag key,
	// which no listener reads.
	regionKeyed struct {
		mgm.DefaultModel `bson:",inline"`
		Name             string `bson:"name"`
		Region           string `json:"region" bson:"region" region:"eu"`
	}
	// regionPlace is inlined by regionInlined, with the same mistake.
	regionPlace struct {
		Home string `bson:"home" region:"home"`
	}
	regionInlined struct {
		mgm.DefaultModel `bson:",inline"`
		regionPlace      `bson:",inline"`
	}
	// regionBound binds its field as the policy reads it.
	regionBound struct {
		mgm.DefaultModel `bson:",inline"`
		Region           string `bson:"region" policy:"region"`
	}
	// regionFree has tag keys that no policy on the bus is named.
	regionFree struct {
		mgm.DefaultModel `bson:",inline"`
		X                string `json:"x" bson:"x" foo:"bar"`
	}
)

// TestPolicyNameAsTagKeyIsRefused: a field whose struct tag has a key
// that is the name of a policy on the bus (region:"eu" beside a policy
// "region") is refused by repo.New, naming the type, the field, the tag
// as written and the fix, before anything reaches the database: the key
// would be ignored, and the field unprotected. The policy is the
// application's own, so the check knows no policy's name.
func TestPolicyNameAsTagKeyIsRefused(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(regionPolicy{})

	_, err := repo.New[*regionKeyed](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	assert.NotErrorIs(t, err, repo.ErrUnenforced, "the policy is there; the tag is wrong")
	assert.EqualError(t, err, `repo.New[*repo_test.regionKeyed]: field Region: tag region:"eu" is not read by any listener; policy "region" binds fields with policy:"region" (docs/policies.md#registration): model: invalid struct tag`)

	_, err = repo.New[*regionKeyed](bus, repo.WithDatabase(db), repo.Unenforced("region"))
	assert.ErrorIs(t, err, model.ErrInvalidTag, "Unenforced does not lift it: rename the key")
	_, err = repo.New[*regionInlined](bus, repo.WithDatabase(db))
	assert.ErrorIs(t, err, model.ErrInvalidTag, "in an inlined struct too")
	assert.ErrorContains(t, err, `field Home: tag region:"home"`)
	restricted := events.NewBus()
	restricted.Register(regionPolicy{}, events.On(events.BeforeQuery))
	_, err = repo.New[*regionKeyed](restricted, repo.WithDatabase(db))
	assert.ErrorIs(t, err, model.ErrInvalidTag, "a policy restricted to some events is still named so")

	names, err := db.ListCollectionNames(ctx, bson.D{})
	require.NoError(t, err)
	assert.Empty(t, names, "nothing reached the database")
	assert.Zero(t, count(t, db, "region_keyeds", nil))

	bound, err := repo.New[*regionBound](bus, repo.WithDatabase(db))
	require.NoError(t, err, `policy:"region" is how the policy binds a field`)
	require.NoError(t, bound.Insert(ctx, &regionBound{Region: "eu"}))
	free, err := repo.New[*regionFree](bus, repo.WithDatabase(db))
	require.NoError(t, err, "json and foo name no policy on the bus")
	require.NoError(t, free.Insert(ctx, &regionFree{X: "x"}))
	assert.Equal(t, int64(1), count(t, db, "region_frees", nil))
	_, err = repo.New[*regionKeyed](events.NewBus(), repo.WithDatabase(db))
	assert.NoError(t, err, "without a policy named region, region is a key like any other")
}
