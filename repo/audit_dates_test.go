package repo_test

import (
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// auditedPost would store two creation times: DefaultModel's created_at
// and its own createdAt.
type auditedPost struct {
	mgm.DefaultModel `bson:",inline"`
	Created          time.Time `bson:"createdAt" audit:"createdAt"`
}

// TestNewRefusesTwoCreationTimes: repo.New refuses a model that embeds
// mgm.DefaultModel and tags a field audit:"createdAt", and says what to do.
func TestNewRefusesTwoCreationTimes(t *testing.T) {
	_, err := repo.New[*auditedPost](events.NewBus(), repo.WithDatabase(srv.Database(t)))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, "use DefaultModel's CreatedAt")
	assert.ErrorContains(t, err, "embed mgm.IDField instead of mgm.DefaultModel")
}
