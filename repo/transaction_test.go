package repo_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/async"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// On a server without transactions, Transaction refuses before the body
// runs, naming the server, and nothing is written.
func TestTransactionRefusedWithoutTransactions(t *testing.T) {
	if srv.Info().Transactions {
		t.Skip("the server runs transactions; the refusal needs one that does not (the embedded FerretDB)")
	}
	db := srv.Database(t)
	plains, err := repo.New[*plain](events.NewBus(), repo.WithDatabase(db))
	require.NoError(t, err)
	ran := false
	err = repo.Transaction(ctx, db.Client(), func(ctx context.Context) error {
		ran = true
		return plains.Insert(ctx, &plain{Name: "a"})
	})
	require.ErrorIs(t, err, repo.ErrNoTransactions)
	assert.False(t, ran, "the body does not run")
	assert.Contains(t, err.Error(), "FerretDB", "the error names the server")
	t.Log(err)
	n, err := db.Collection("plains").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestTransactionArguments(t *testing.T) {
	err := repo.Transaction(ctx, srv.Database(t).Client(), nil)
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	//lint:ignore SA1012 a nil context is the bad input under test
	err = repo.Transaction(nil, srv.Database(t).Client(), func(context.Context) error { return nil })
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
}

// txFixture is a repository on a bus with an async and a synchronous
// listener that record the names of saved models.
type txFixture struct {
	db      *mongo.Database
	plains  *repo.Repository[*plain]
	async   *async.Listener
	mu      sync.Mutex
	asyncs  []string
	inlines []string
}

func newTxFixture(t *testing.T) *txFixture {
	t.Helper()
	srv.Require(t, "transactions")
	f := &txFixture{db: srv.Database(t)}
	record := func(to *[]string) events.ListenerFunc {
		return func(_ context.Context, e *events.Event) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			*to = append(*to, e.Model.(*plain).Name)
			return nil
		}
	}
	f.async = async.New(record(&f.asyncs))
	bus := events.NewBus()
	bus.Register(f.async, events.On(events.AfterSave))
	bus.Register(record(&f.inlines), events.On(events.AfterSave))
	var err error
	f.plains, err = repo.New[*plain](bus, repo.WithDatabase(f.db))
	require.NoError(t, err)
	require.NoError(t, f.db.CreateCollection(ctx, "plains")) // no implicit creation inside a transaction
	return f
}

// closed closes the async listener and returns what both listeners had.
func (f *txFixture) closed(t *testing.T) (asyncs, inlines []string) {
	t.Helper()
	require.NoError(t, f.async.Close(ctx))
	return f.asyncs, f.inlines
}

func (f *txFixture) stored(t *testing.T) []string {
	t.Helper()
	found, err := f.plains.Find(ctx, bson.D{})
	require.NoError(t, err)
	var names []string
	for _, p := range found {
		names = append(names, p.Name)
	}
	return names
}

// A commit stores the writes and then delivers their events to the async
// listener.
func TestTransactionCommitDelivers(t *testing.T) {
	f := newTxFixture(t)
	err := repo.Transaction(ctx, f.db.Client(), func(ctx context.Context) error {
		if err := f.plains.Insert(ctx, &plain{Name: "a"}); err != nil {
			return err
		}
		return f.plains.Insert(ctx, &plain{Name: "b"})
	})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b"}, f.stored(t))
	asyncs, inlines := f.closed(t)
	assert.Equal(t, []string{"a", "b"}, asyncs)
	assert.Equal(t, []string{"a", "b"}, inlines)
}

// An abort stores nothing, and the async listener hears nothing of the
// write the synchronous listener saw.
func TestTransactionAbortDrops(t *testing.T) {
	f := newTxFixture(t)
	boom := errors.New("boom")
	err := repo.Transaction(ctx, f.db.Client(), func(ctx context.Context) error {
		require.NoError(t, f.plains.Insert(ctx, &plain{Name: "a"}))
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.Empty(t, f.stored(t))
	asyncs, inlines := f.closed(t)
	assert.Empty(t, asyncs)
	assert.Equal(t, []string{"a"}, inlines, "synchronous listeners see uncommitted writes")
}

// A transient error reruns the body in a new transaction: only the second
// run's write is stored, and only its event delivered.
func TestTransactionRetryDropsFirstRun(t *testing.T) {
	f := newTxFixture(t)
	runs := 0
	err := repo.Transaction(ctx, f.db.Client(), func(ctx context.Context) error {
		runs++
		if runs == 1 {
			require.NoError(t, f.plains.Insert(ctx, &plain{Name: "first"}))
			return mongo.CommandError{Code: 112, Message: "simulated write conflict", Labels: []string{"TransientTransactionError"}}
		}
		return f.plains.Insert(ctx, &plain{Name: "second"})
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)
	assert.Equal(t, []string{"second"}, f.stored(t))
	asyncs, _ := f.closed(t)
	assert.Equal(t, []string{"second"}, asyncs)
}

// A nested Transaction joins the outer one; its failure aborts the whole
// transaction even when the outer body swallows the error.
func TestTransactionNested(t *testing.T) {
	f := newTxFixture(t)
	inner := errors.New("inner")
	err := repo.Transaction(ctx, f.db.Client(), func(ctx context.Context) error {
		require.NoError(t, f.plains.Insert(ctx, &plain{Name: "outer"}))
		err := repo.Transaction(ctx, f.db.Client(), func(ctx context.Context) error {
			require.NoError(t, f.plains.Insert(ctx, &plain{Name: "inner"}))
			return inner
		})
		assert.ErrorIs(t, err, inner)
		return nil // swallowed
	})
	require.ErrorIs(t, err, inner)
	assert.Empty(t, f.stored(t))
	asyncs, _ := f.closed(t)
	assert.Empty(t, asyncs)
}

// A context carrying a transaction that Transaction did not start is
// refused: the events could not wait for its commit.
func TestTransactionRefusesForeignTransaction(t *testing.T) {
	f := newTxFixture(t)
	sess, err := f.db.Client().StartSession()
	require.NoError(t, err)
	defer sess.EndSession(ctx)
	require.NoError(t, sess.StartTransaction())
	sc := mongo.NewSessionContext(ctx, sess)
	err = repo.Transaction(sc, f.db.Client(), func(context.Context) error { return nil })
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	require.NoError(t, sess.AbortTransaction(ctx))
}
