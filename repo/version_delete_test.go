package repo_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestStaleDeleteConflicts: a delete of a versioned model is filtered on
// its version, as Spring's MongoTemplate does: a stale copy deletes
// nothing and gets ErrVersionConflict; the current copy deletes.
func TestStaleDeleteConflicts(t *testing.T) {
	_, accounts, db := setup[*account](t, nil)
	a := &account{Balance: 10}
	require.NoError(t, accounts.Insert(ctx, a))
	stale, err := accounts.FindByID(ctx, a.ID)
	require.NoError(t, err)
	a.Balance = 20
	require.NoError(t, accounts.Update(ctx, a))

	assert.ErrorIs(t, accounts.Delete(ctx, stale), repo.ErrVersionConflict)
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"_id": a.ID, "balance": 20}), "the document someone else changed stays")

	require.NoError(t, accounts.Delete(ctx, a))
	assert.Equal(t, int64(0), count(t, db, "accounts", bson.M{}))
	require.NoError(t, accounts.Delete(ctx, a), "deleting a missing document is not an error")
}
