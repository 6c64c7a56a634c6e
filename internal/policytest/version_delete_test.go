package policytest_test

import (
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// Draft is soft-deleted and versioned.
type Draft struct {
	mgm.DefaultModel `bson:",inline"`
	Text             string     `bson:"text"`
	Version          int64      `bson:"version" auto:"version"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// TestStaleSoftDeleteConflicts: under soft delete too, a stale copy of a
// versioned model marks nothing and gets ErrVersionConflict.
func TestStaleSoftDeleteConflicts(t *testing.T) {
	drafts, db := softDeleted[*Draft](t)
	d := &Draft{Text: "v1"}
	require.NoError(t, drafts.Insert(ctx, d))
	stale, err := drafts.FindByID(ctx, d.ID)
	require.NoError(t, err)
	d.Text = "v2"
	require.NoError(t, drafts.Update(ctx, d))

	assert.ErrorIs(t, drafts.Delete(ctx, stale), repo.ErrVersionConflict)
	docs := mongotest.Docs(t, db.Collection("drafts"), bson.D{})
	require.Len(t, docs, 1)
	_, marked := docs[0].Lookup("deletedAt").TimeOK()
	assert.False(t, marked, "not marked")

	require.NoError(t, drafts.Delete(ctx, d))
	docs = mongotest.Docs(t, db.Collection("drafts"), bson.D{})
	require.Len(t, docs, 1)
	_, marked = docs[0].Lookup("deletedAt").TimeOK()
	assert.True(t, marked, "the current copy marks it")
}
