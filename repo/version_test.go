package repo_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

type account struct {
	mgm.DefaultModel `bson:",inline"`
	Balance          int   `bson:"balance"`
	Version          int64 `bson:"version" auto:"version"`
}

func TestVersionStartsAtOneAndIncrements(t *testing.T) {
	_, accounts, db := setup[*account](t, nil)
	a := &account{Balance: 10}
	require.NoError(t, accounts.Insert(ctx, a))
	assert.Equal(t, int64(1), a.Version)
	a.Balance = 20
	require.NoError(t, accounts.Update(ctx, a))
	assert.Equal(t, int64(2), a.Version)
	a.Balance = 30
	require.NoError(t, accounts.Save(ctx, a))
	assert.Equal(t, int64(3), a.Version)
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"version": 3, "balance": 30}))
}

func TestVersionConflictLeavesDocumentUnchanged(t *testing.T) {
	versionStrategies(t, func(t *testing.T, accounts *repo.Repository[*account], db *mongo.Database) {
		conflictLeavesDocumentUnchanged(t, accounts, db)
	})
}

func conflictLeavesDocumentUnchanged(t *testing.T, accounts *repo.Repository[*account], db *mongo.Database) {
	a := &account{Balance: 10}
	require.NoError(t, accounts.Insert(ctx, a))
	first, err := accounts.FindByID(ctx, a.ID)
	require.NoError(t, err)
	second, err := accounts.FindByID(ctx, a.ID)
	require.NoError(t, err)

	first.Balance = 100
	require.NoError(t, accounts.Update(ctx, first))
	second.Balance = 999
	err = accounts.Update(ctx, second)
	require.ErrorIs(t, err, repo.ErrVersionConflict)
	assert.Equal(t, int64(1), second.Version, "the failed write takes its version bump back")
	err = accounts.Save(ctx, second)
	require.ErrorIs(t, err, repo.ErrVersionConflict, "Save of a stale model too")
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"balance": 100, "version": 2}), "the winner's write stands")
	assert.Zero(t, count(t, db, "accounts", bson.M{"balance": 999}))
}

// versionStrategies runs f with each way of settling a versioned write: the
// server's choice (claims on FerretDB), and the atomic version filter alone,
// forced, on a database where filtered writes are atomic (one connection,
// on the embedded server).
func versionStrategies(t *testing.T, f func(t *testing.T, accounts *repo.Repository[*account], db *mongo.Database)) {
	t.Run("detect", func(t *testing.T) {
		_, accounts, db := setup[*account](t, nil)
		f(t, accounts, db)
	})
	t.Run("atomic", func(t *testing.T) {
		db := srv.Database(t)
		accounts, err := repo.New[*account](events.NewBus(), repo.WithDatabase(db), repo.WithVersionStrategy(sequence.Atomic))
		require.NoError(t, err)
		f(t, accounts, db)
		assert.Zero(t, count(t, db, "accounts.versions", nil), "the filter alone: no claim was written")
	})
}

// TestVersionUnderConcurrency: goroutines read, change and write one
// document, retrying on conflict. Every write must count exactly once, so
// the final version is the number of successful writes plus one.
func TestVersionUnderConcurrency(t *testing.T) {
	versionStrategies(t, func(t *testing.T, accounts *repo.Repository[*account], db *mongo.Database) {
		underConcurrency(t, accounts, db)
	})
}

func underConcurrency(t *testing.T, accounts *repo.Repository[*account], db *mongo.Database) {
	const goroutines, each = 8, 10
	a := &account{}
	require.NoError(t, accounts.Insert(ctx, a))
	var ok, conflicts atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				cur, err := accounts.FindByID(ctx, a.ID)
				if err != nil {
					t.Error(err)
					return
				}
				cur.Balance++
				switch err := accounts.Update(ctx, cur); {
				case err == nil:
					ok.Add(1)
					done++
				case errors.Is(err, repo.ErrVersionConflict):
					conflicts.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	final, err := accounts.FindByID(ctx, a.ID)
	require.NoError(t, err)
	t.Logf("%d writes, %d conflicts", ok.Load(), conflicts.Load())
	assert.Equal(t, int64(goroutines*each), ok.Load())
	assert.Equal(t, ok.Load()+1, final.Version, "final version = successful writes + 1")
	assert.Equal(t, int(ok.Load()), final.Balance, "no update was lost")
	assert.Equal(t, int64(1), count(t, db, "accounts", nil))
	// The claim before a write is deleted in a batch soon after it.
	assert.Eventually(t, func() bool { return count(t, db, "accounts.versions", nil) <= 1 }, 10*time.Second, 20*time.Millisecond,
		"a claim is deleted once the write after it succeeded: at most the last stays")
}

// TestVersionClaimLeftByADeadWriter: where versions are settled by claims,
// a claim whose writer died before writing blocks the next version only
// until it is stale.
func TestVersionClaimLeftByADeadWriter(t *testing.T) {
	if srv.Info().AtomicFindMod {
		t.Skip("this server filters versioned writes atomically; no claims are made")
	}
	_, accounts, db := setup[*account](t, nil)
	a := &account{}
	require.NoError(t, accounts.Insert(ctx, a))
	claims := db.Collection("accounts.versions")
	key := a.ID.Hex() + "#2"

	_, err := claims.InsertOne(ctx, bson.M{"_id": key, "at": time.Now()})
	require.NoError(t, err)
	require.ErrorIs(t, accounts.Update(ctx, a), repo.ErrVersionConflict, "a live claim holds version 2")

	_, err = claims.UpdateOne(ctx, bson.M{"_id": key}, bson.M{"$set": bson.M{"at": time.Now().Add(-time.Hour)}})
	require.NoError(t, err)
	a.Balance = 5
	require.NoError(t, accounts.Update(ctx, a), "a stale claim on an unchanged document is cleared")
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"version": 2, "balance": 5}))
}

func TestVersionStrategyIsChecked(t *testing.T) {
	_, err := repo.New[*account](nil, repo.WithDatabase(srv.PooledDatabase(t)), repo.WithVersionStrategy(sequence.Strategy(9)))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "WithVersionStrategy(Strategy(9))")
}

// TestVersionedSaveRoundTrips counts the commands a versioned Save sends:
// where versions are settled by claims, the claim insert and the filtered
// replace (the claim before is deleted later, in a batch); where the
// server filters atomically, the replace alone.
func TestVersionedSaveRoundTrips(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	swept := make(chan struct{}, 16)
	mon := &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			mu.Lock()
			sent = append(sent, e.CommandName)
			mu.Unlock()
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			if e.CommandName == "delete" {
				swept <- struct{}{}
			}
		},
	}
	client, err := srv.Client(ctx, options.Client().SetMonitor(mon))
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	db := client.Database(srv.PooledDatabase(t).Name())
	accounts, err := repo.New[*account](events.NewBus(), repo.WithDatabase(db))
	require.NoError(t, err)
	a := &account{Balance: 1}
	require.NoError(t, accounts.Insert(ctx, a))
	a.Balance = 2
	require.NoError(t, accounts.Save(ctx, a)) // asks the server what it is, once per client
	claims := !srv.Info().AtomicFindMod
	if claims {
		select { // the claim before this Save is deleted, now or in a batch
		case <-swept:
		case <-time.After(20 * time.Second):
			t.Fatal("the claim before the first Save was never deleted")
		}
	}
	mu.Lock()
	sent = nil
	mu.Unlock()
	a.Balance = 3
	require.NoError(t, accounts.Save(ctx, a))
	mu.Lock()
	defer mu.Unlock()
	if claims {
		assert.Equal(t, []string{"insert", "update"}, sent, "a claim insert and the replace: two round trips")
	} else {
		assert.Equal(t, []string{"update"}, sent, "one filtered replace")
	}
}
