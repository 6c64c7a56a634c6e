package policytest_test

import (
	"context"
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

// claimer claims the policies' tags and enforces nothing.
type claimer struct{}

func (claimer) HandleEvent(context.Context, *events.Event) error { return nil }
func (claimer) EnforcesPolicy()                                  {}
func (claimer) EnforcesTags() []string {
	return []string{"tenant", "encrypt", "softdelete", outbox.PolicyTag}
}

// narrowed is the tenancy policy, embedded in a type that declares fewer
// event types than Tenancy handles.
type narrowed struct{ *tenancy.Tenancy }

func (narrowed) EventTypes() []events.Type { return []events.Type{events.BeforeConvert} }

// idle is the tenancy policy, embedded in a type that handles no event.
type idle struct{ *tenancy.Tenancy }

func (idle) HandleEvent(context.Context, *events.Event) error { return nil }

// Claimed has a field of each policy tag.
type Claimed struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" tenant:"id"`
	Email            string     `bson:"email" encrypt:""`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" softdelete:"at"`
	outbox.Recorder  `bson:"-"`
}

// TestPolicyTagsNeedTheRealPolicy: repo.New refuses a model whose policy
// tags only a listener claims (AsPolicy or EnforcesPolicy with
// EnforcesTags), or only a type embedding the real policy enforces, one
// that narrows its event types or handles none: for each tag, the real
// policy, registered as itself, is what makes repo.New accept the model.
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
		{"claimer", claimer{}, nil},
		{"claimer AsPolicy", claimer{}, []events.Option{events.AsPolicy()}},
		{"narrowed tenancy", narrowed{tenancy.New()}, nil},
		{"idle tenancy", idle{tenancy.New()}, nil},
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
		bus.Register(claimer{}, events.AsPolicy())
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
