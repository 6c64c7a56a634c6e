package softdelete_test

import (
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type markNotTime struct {
	mgm.DefaultModel `bson:",inline"`
	Gone             string `bson:"gone" policy:"softdelete,at"`
}

type twoMarks struct {
	mgm.DefaultModel `bson:",inline"`
	Gone             *time.Time `bson:"gone" policy:"softdelete,at"`
	Also             *time.Time `bson:"also" policy:"softdelete,at"`
}

type byWithoutAt struct {
	mgm.DefaultModel `bson:",inline"`
	By               string `bson:"by" policy:"softdelete,by"`
}

type unknownMark struct {
	mgm.DefaultModel `bson:",inline"`
	Gone             *time.Time `bson:"gone" policy:"softdelete,when"`
}

type bareMark struct {
	mgm.DefaultModel `bson:",inline"`
	Gone             *time.Time `bson:"gone" policy:"softdelete"`
}

// TestSoftDeleteTagsAreValidated: SoftDelete refuses, when the repository
// is created, softdelete fields it cannot govern, naming the type, the
// field, its tag and the reason; model knows nothing of them.
func TestSoftDeleteTagsAreValidated(t *testing.T) {
	bus := events.NewBus()
	bus.Register(softdelete.New())
	db := srv.Database(t)
	for _, tc := range []struct {
		new  func() error
		want string
	}{
		{func() error { _, err := repo.New[*markNotTime](bus, repo.WithDatabase(db)); return err }, "markNotTime field Gone `policy:\"softdelete,at\"`: needs a time.Time, *time.Time or primitive.DateTime field, not string"},
		{func() error { _, err := repo.New[*twoMarks](bus, repo.WithDatabase(db)); return err }, "field Also `policy:\"softdelete,at\"`: a second policy:\"softdelete,at\" field (the first is Gone)"},
		{func() error { _, err := repo.New[*byWithoutAt](bus, repo.WithDatabase(db)); return err }, "field By `policy:\"softdelete,by\"`: a policy:\"softdelete,by\" field needs a policy:\"softdelete,at\" field"},
		{func() error { _, err := repo.New[*unknownMark](bus, repo.WithDatabase(db)); return err }, "field Gone `policy:\"softdelete,when\"`: want policy:\"softdelete,at\""},
		{func() error { _, err := repo.New[*bareMark](bus, repo.WithDatabase(db)); return err }, "field Gone `policy:\"softdelete\"`: want policy:\"softdelete,at\""},
	} {
		err := tc.new()
		require.ErrorIs(t, err, model.ErrInvalidTag)
		assert.ErrorContains(t, err, tc.want)
	}
	for _, f := range []func() error{
		func() error { _, err := model.For[*markNotTime](); return err },
		func() error { _, err := model.For[*byWithoutAt](); return err },
	} {
		assert.NoError(t, f(), "model parses the tag without knowing the policy")
	}
}
