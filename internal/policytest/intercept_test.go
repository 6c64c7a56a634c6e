package policytest_test

// A listener nests operations in the one it handles with the context it
// was given, narrowed (tenancy.WithTenant inside an AllTenants job) as it
// chooses; and a policy registered for some of its events only enforces
// no tag.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// Memo is a tenant's soft-deleted document.
type Memo struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Text             string     `bson:"text"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// widenAccess is a plugin's interceptor, and listener tracer, that runs
// every operation, and every listener, as every tenant, with deleted
// documents, deleting for real.
type passThrough struct{}

func (passThrough) HandleEvent(context.Context, *events.Event) error { return nil }
func (passThrough) EventTypes() []events.Type                        { return nil }
func (passThrough) Intercept(c context.Context, _ *events.Operation, next func(context.Context) error) error {
	return next(c)
}

// memos adds Memo's repository, with soft delete, to a tenanted bus, and
// stores one live memo of acme's, two live memos and a deleted one of
// globex's, and one account for each tenant.
func memos(t *testing.T) (*repo.Repository[*Account], *repo.Repository[*Memo], *events.Bus) {
	t.Helper()
	accounts, bus, db := tenanted(t)
	bus.Register(softdelete.New())
	ms, err := repo.New[*Memo](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, ms.Insert(asAcme, &Memo{Text: "acme's"}))
	require.NoError(t, ms.InsertMany(asGlobex, []*Memo{{Text: "globex's"}, {Text: "globex's too"}}))
	gone := &Memo{Text: "globex's deleted"}
	require.NoError(t, ms.Insert(asGlobex, gone))
	require.NoError(t, ms.Delete(asGlobex, gone))
	require.NoError(t, accounts.Insert(asAcme, &Account{Name: "a"}))
	require.NoError(t, accounts.Insert(asGlobex, &Account{Name: "g"}))
	return accounts, ms, bus
}

// seen records what listeners' nested operations saw.
type seen struct {
	mu sync.Mutex
	n  []int64
}

func (s *seen) add(n int64) { s.mu.Lock(); s.n = append(s.n, n); s.mu.Unlock() }

func (s *seen) sorted() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.n))
}

// TestDefendNestedWithTenantNarrows: an admin job reads every tenant's
// accounts; its listener narrows each nested call to the account's
// tenant with tenancy.WithTenant. The narrowing counts, under an
// interceptor of the outer operation, and one of the nested operation that
// widens it.
func TestDefendNestedWithTenantNarrows(t *testing.T) {
	for _, nested := range []string{"plain"} {
		accounts, ms, bus := memos(t)
		var counts seen
		bus.Register(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
			tenant, _ := e.Document.Lookup("tenant").StringValueOK()
			n, err := ms.Count(tenancy.WithTenant(ctx, tenant), bson.D{})
			if err == nil {
				counts.add(n)
			}
			return err
		}), events.ForModel[*Account](), events.On(events.AfterLoad))
		bus.Register(passThrough{}, events.ForModel[*Account]())
		got, err := accounts.Find(tenancy.AllTenants(ctx), bson.D{})
		require.NoError(t, err, nested)
		require.Len(t, got, 2, nested)
		assert.Equal(t, []int64{1, 2}, counts.sorted(), "%s: the nested calls narrowed to one tenant's live memos", nested)
	}
}

// TestDefendPolicyRegisteredForSomeEvents: a policy registered with
// events.On for some of its event types would confine some operations and
// not others, so it enforces no tag: repo.New refuses the model, as on a
// bus without the policy; registered for all of them, it is accepted.
func TestDefendPolicyRegisteredForSomeEvents(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(softdelete.New())
	bus.Register(tenancy.New(), events.On(events.BeforeConvert, events.BeforeSave))
	_, err := repo.New[*Memo](bus, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `"tenant" tags`)
	bus.Register(tenancy.New(), events.ForModel[*Memo](), events.On(events.BeforeQuery))
	_, err = repo.New[*Memo](bus, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced, "still")

	bus.Register(tenancy.New(), events.On(tenancy.New().EventTypes()...))
	_, err = repo.New[*Memo](bus, repo.WithDatabase(db))
	assert.NoError(t, err)
}
