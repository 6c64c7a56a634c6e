package policytest_test

import (
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Claimed has a field of each policy tag.
type Claimed struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Email            string     `bson:"email" policy:"encrypt"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
	outbox.Recorder  `bson:"-"`
}

// TestPolicyTagsNeedTheRealPolicy: repo.New refuses a model whose policy
// tags no policy on the bus enforces, or only one registered for some of
// its event types (events.On): for each tag, its policy is what makes repo.New accept the
// model.
func TestPolicyTagsNeedTheRealPolicy(t *testing.T) {
	db := srv.Database(t)
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret(t)}})
	require.NoError(t, err)
	ob := outbox.New()
	policies := []events.Listener{tenancy.New(), enc, softdelete.New(), ob}

	for _, fake := range []struct {
		name string
		l    events.Listener
		opts []events.Option
	}{
		{"tenancy on some events", tenancy.New(), []events.Option{events.On(events.BeforeQuery)}},
	} {
		bus := events.NewBus()
		bus.Register(fake.l, fake.opts...)
		for _, p := range policies[1:] {
			bus.Register(p)
		}
		_, err := repo.New[*Claimed](bus, repo.WithDatabase(db))
		require.ErrorIs(t, err, repo.ErrUnenforced, fake.name)
		assert.ErrorContains(t, err, `"tenant"`, fake.name)
	}
	for skip := range policies {
		bus := events.NewBus()
		for i, p := range policies {
			if i != skip {
				bus.Register(p)
			}
		}
		_, err := repo.New[*Claimed](bus, repo.WithDatabase(db))
		require.ErrorIs(t, err, repo.ErrUnenforced, "without %T", policies[skip])
	}
	bus := events.NewBus()
	for _, p := range policies {
		bus.Register(p)
	}
	_, err = repo.New[*Claimed](bus, repo.WithDatabase(db))
	require.NoError(t, err)
}
