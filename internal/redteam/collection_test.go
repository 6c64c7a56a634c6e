package redteam_test

import (
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AccountName is a read model of the "accounts" collection that leaves
// out the tenant field, as a list view or a report would.
type AccountName struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

// CollectionName puts AccountName in the accounts collection.
func (*AccountName) CollectionName() string { return "accounts" }

// A second repository over a tenant collection, for a model that omits
// the tenant field, is refused: it would read every tenant.
func TestDefendSecondModelOnTenantCollection(t *testing.T) {
	w := wire(t)
	w.seed(t)
	names, err := repo.New[*AccountName](w.bus, repo.WithDatabase(w.db))
	require.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, "AccountName")
	assert.ErrorContains(t, err, "redteam_test.Account")
	assert.ErrorContains(t, err, `"tenant"`)
	assert.Nil(t, names)
}

// In the other order, the tenant model is refused on a collection that an
// untagged model already serves, since that one reads every tenant.
func TestDefendTenantModelAfterUntaggedOne(t *testing.T) {
	w := wire(t)
	db := srv.Database(t)
	_, err := repo.New[*AccountName](w.bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = repo.New[*Account](w.bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, "AccountName")
	assert.ErrorContains(t, err, `"tenant"`)
}

// repo.Unenforced("tenant") lets a model without the tenant field serve
// the collection knowingly (an admin report), in either order.
func TestDefendUntaggedModelUnenforcedKnowingly(t *testing.T) {
	w := wire(t)
	_, err := repo.New[*AccountName](w.bus, repo.WithDatabase(w.db), repo.Unenforced("tenant"))
	require.NoError(t, err)

	db := srv.Database(t)
	_, err = repo.New[*AccountName](w.bus, repo.WithDatabase(db), repo.Unenforced("tenant"))
	require.NoError(t, err)
	_, err = repo.New[*Account](w.bus, repo.WithDatabase(db))
	require.NoError(t, err)
}
