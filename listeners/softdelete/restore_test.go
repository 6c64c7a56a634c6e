package softdelete_test

import (
	"context"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// Page is soft-deleted and versioned.
type Page struct {
	mgm.DefaultModel `bson:",inline"`
	Text             string     `bson:"text"`
	Version          int64      `bson:"version" auto:"version"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
	DeletedBy        string     `bson:"deletedBy,omitempty" policy:"softdelete,by"`
}

// TestDeleteKeepsTheModelUpToDate: after a soft Delete the model holds the
// mark, who deleted it and its new version, as stored; restored with
// RestoreModel, it is live again and a Save of it works.
func TestDeleteKeepsTheModelUpToDate(t *testing.T) {
	pages, db := softDeleted[*Page](t)
	alice := context.WithValue(ctx, userKey{}, "alice")
	p := &Page{Text: "v1"}
	require.NoError(t, pages.Insert(ctx, p))
	require.NoError(t, pages.Delete(alice, p))
	require.NotNil(t, p.DeletedAt)
	assert.Equal(t, deletedAt, p.DeletedAt.UTC())
	assert.Equal(t, "alice", p.DeletedBy)
	assert.Equal(t, int64(2), p.Version, "the version the delete stored")
	stored, err := pages.FindByID(softdelete.WithDeleted(ctx), p.ID)
	require.NoError(t, err)
	assert.Equal(t, stored.Version, p.Version)
	assert.Equal(t, stored.DeletedBy, p.DeletedBy)

	require.NoError(t, softdelete.RestoreModel(ctx, pages, p))
	assert.Nil(t, p.DeletedAt)
	assert.Empty(t, p.DeletedBy)
	assert.Equal(t, int64(3), p.Version)
	docs := mongotest.Docs(t, db.Collection("pages"), bson.D{})
	require.Len(t, docs, 1)
	for _, f := range []string{"deletedAt", "deletedBy"} {
		_, err := docs[0].LookupErr(f)
		assert.Error(t, err, "%s is unset", f)
	}
	p.Text = "v2"
	require.NoError(t, pages.Save(ctx, p), "the restored model saves")
	got, err := pages.FindByID(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, "v2", got.Text)
}

// Sheet is a tenant's soft-deleted document.
type Sheet struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// TestRestoreByFilterRespectsTenancy: Restore brings back the marked
// documents its filter matches, its tenant's only, and publishes the
// update's events.
func TestRestoreByFilterRespectsTenancy(t *testing.T) {
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(tenancy.New())
	bus.Register(softdelete.New())
	var updates int
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { updates++; return nil }), events.On(events.AfterUpdate))
	sheets, err := repo.New[*Sheet](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	acme, globex := tenancy.WithTenant(ctx, "acme"), tenancy.WithTenant(ctx, "globex")
	for _, c := range []context.Context{acme, acme, globex} {
		s := &Sheet{}
		require.NoError(t, sheets.Insert(c, s))
		require.NoError(t, sheets.Delete(c, s))
	}
	n, err := softdelete.Restore(acme, sheets, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	assert.Equal(t, 1, updates, "AfterUpdate is published")
	live, err := sheets.Count(tenancy.AllTenants(ctx), bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), live, "globex's stays deleted")
	_, err = softdelete.Restore(ctx, sheets, bson.D{})
	assert.ErrorIs(t, err, tenancy.ErrNoTenant)
	_, err = softdelete.Restore(acme, sheets, nil)
	assert.Error(t, err)
}
