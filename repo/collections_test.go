package repo_test

import (
	"context"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tagPolicy stands for the policies: it enforces every policy tag.
type tagPolicy struct{}

func (tagPolicy) HandleEvent(context.Context, *events.Event) error { return nil }
func (tagPolicy) EnforcesPolicy()                                  {}
func (tagPolicy) EnforcesTags() []string                           { return []string{"tenant", "softdelete", "encrypt"} }

// Models of one "shared" collection, each with other policy fields.
type (
	sharedTenant struct {
		mgm.DefaultModel `bson:",inline"`
		Tenant           string `bson:"tenant" policy:"tenant"`
	}
	sharedTenantToo struct { // the same policy fields as sharedTenant
		mgm.DefaultModel `bson:",inline"`
		Tenant           string `bson:"tenant" policy:"tenant"`
		Name             string `bson:"name"`
	}
	sharedOrg struct { // another tenant field
		mgm.DefaultModel `bson:",inline"`
		Org              string `bson:"org" policy:"tenant"`
	}
	sharedEq struct {
		mgm.DefaultModel `bson:",inline"`
		Tenant           string `bson:"tenant" policy:"tenant"`
		Email            string `bson:"email" policy:"encrypt,eq"`
	}
	sharedRandom struct { // email encrypted without its blind index
		mgm.DefaultModel `bson:",inline"`
		Tenant           string `bson:"tenant" policy:"tenant"`
		Email            string `bson:"email" policy:"encrypt"`
	}
	sharedDeleted struct {
		mgm.DefaultModel `bson:",inline"`
		Tenant           string     `bson:"tenant" policy:"tenant"`
		DeletedAt        *time.Time `bson:"deletedAt" policy:"softdelete,at"`
	}
)

func (*sharedTenant) CollectionName() string    { return "shared" }
func (*sharedTenantToo) CollectionName() string { return "shared" }
func (*sharedOrg) CollectionName() string       { return "shared" }
func (*sharedEq) CollectionName() string        { return "shared" }
func (*sharedRandom) CollectionName() string    { return "shared" }
func (*sharedDeleted) CollectionName() string   { return "shared" }

// TestCollectionPolicyFieldsAgree: the repositories of one collection
// declare the same policy fields, whichever model comes first; models of
// another database, and models that agree, are not affected.
func TestCollectionPolicyFieldsAgree(t *testing.T) {
	bus := events.NewBus()
	bus.Register(tagPolicy{})
	db := srv.Database(t)
	_, err := repo.New[*sharedTenant](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = repo.New[*sharedTenantToo](bus, repo.WithDatabase(db))
	require.NoError(t, err, "the same policy fields")
	_, err = repo.New[*sharedTenant](bus, repo.WithDatabase(db))
	require.NoError(t, err, "the same model again")

	_, err = repo.New[*sharedOrg](bus, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced, "another tenant field")
	assert.ErrorContains(t, err, "sharedOrg")
	_, err = repo.New[*sharedEq](bus, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced, "encrypted fields the others lack")
	assert.ErrorContains(t, err, `"encrypt"`)
	_, err = repo.New[*sharedDeleted](bus, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced, "a softdelete mark the others lack")
	_, err = repo.New[*sharedDeleted](bus, repo.WithDatabase(db), repo.Unenforced("softdelete"))
	assert.NoError(t, err, "knowingly")

	other := srv.Database(t)
	_, err = repo.New[*sharedEq](bus, repo.WithDatabase(other))
	require.NoError(t, err, "another database")
	_, err = repo.New[*sharedRandom](bus, repo.WithDatabase(other))
	assert.ErrorIs(t, err, repo.ErrUnenforced, "the same field encrypted without its blind index")
	assert.ErrorContains(t, err, "email (eq)")
}
