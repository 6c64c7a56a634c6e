package repo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestBeforeConvertSeesVersionWritten, ported from Spring Data MongoDB's
// tests: a BeforeConvert listener of a versioned write sees the version
// that is written, as BeforeSave's listeners do, and a write that fails
// after it (a veto, a conflict) gives the model back the version it had.
func TestBeforeConvertSeesVersionWritten(t *testing.T) {
	bus, accounts, db := setup[*account](t, nil)
	var seen []int64
	veto := errors.New("vetoed")
	vetoing := false
	bus.Register(events.TypedFunc(func(_ context.Context, e *events.Event, a *account) error {
		seen = append(seen, a.Version)
		return nil
	}), events.On(events.BeforeConvert))
	bus.Register(events.TypedFunc(func(_ context.Context, e *events.Event, a *account) error {
		seen = append(seen, a.Version)
		if vetoing {
			return veto
		}
		return nil
	}), events.On(events.BeforeSave))

	a := &account{Balance: 1}
	require.NoError(t, accounts.Insert(ctx, a))
	a.Balance = 2
	require.NoError(t, accounts.Save(ctx, a))
	a.Balance = 3
	require.NoError(t, accounts.Update(ctx, a))
	assert.Equal(t, []int64{1, 1, 2, 2, 3, 3}, seen, "BeforeConvert and BeforeSave of Insert, Save and Update")
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"_id": a.ID, "version": 3, "balance": 3}))

	vetoing, seen = true, nil
	a.Balance = 4
	require.ErrorIs(t, accounts.Save(ctx, a), veto)
	assert.Equal(t, []int64{4, 4}, seen)
	assert.Equal(t, int64(3), a.Version, "a vetoed write gives the version back")

	vetoing, seen = false, nil
	stale := *a
	require.NoError(t, accounts.Save(ctx, a))
	require.ErrorIs(t, accounts.Save(ctx, &stale), repo.ErrVersionConflict)
	assert.Equal(t, []int64{4, 4, 4, 4}, seen, "the stale model was written as 4 too")
	assert.Equal(t, int64(3), stale.Version, "a conflict gives the version back")
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"_id": a.ID, "version": 4, "balance": 4}))
}

// TestBeforeConvertCannotChangeVersion: a BeforeConvert listener that
// changes the version, which the write's filter and claim were built
// around, is refused; nothing is written and the model keeps its version.
func TestBeforeConvertCannotChangeVersion(t *testing.T) {
	bus, accounts, db := setup[*account](t, nil)
	a := &account{Balance: 1}
	require.NoError(t, accounts.Insert(ctx, a))
	bus.Register(events.TypedFunc(func(_ context.Context, e *events.Event, a *account) error {
		a.Version = 10
		return nil
	}), events.On(events.BeforeConvert))
	a.Balance = 2
	err := accounts.Save(ctx, a)
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "a BeforeConvert listener changed *repo_test.account's version field Version from 2 to 10")
	assert.Equal(t, int64(1), a.Version)
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"_id": a.ID, "version": 1, "balance": 1}))
}
