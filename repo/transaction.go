package repo

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events/async"
	"github.com/mgmevents/mgmevents/internal/serverinfo"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ErrNoTransactions is returned, wrapped, by Transaction on a server that
// runs no multi-document transactions (a standalone mongod, FerretDB),
// before the body runs.
var ErrNoTransactions = errors.New("repo: the server runs no multi-document transactions; they need a MongoDB replica set (4.0 or later) or sharded cluster (4.2 or later)")

// txKey is the context key of the transaction Transaction runs.
type txKey struct{}

// txState is one attempt of a transaction's body.
type txState struct {
	client *mongo.Client
	ended  atomic.Bool
	failed atomic.Pointer[error] // the error of a nested Transaction
}

// Transaction runs fn in one multi-document transaction on client (nil for
// mgm's default client), as the driver's Session.WithTransaction does: it
// starts a session and a transaction, runs fn, commits, and runs fn again
// in a new transaction when the server labels an error transient
// (TransientTransactionError), retrying the commit alone when its result
// is unknown, for up to 120 seconds. Repository methods called with the
// context fn is given join the transaction; fn returns an error to abort
// it, and Transaction returns that error.
//
// The events of the transaction's writes follow it. Synchronous listeners
// run inline, as each operation runs, so they see writes that may still
// abort. An async listener (package events/async) hears only of what
// committed: its events wait in an async.Held (one per run of fn) and are
// queued after the commit; an abort, or a run of fn that is retried, drops them. An event
// that cannot be queued after the commit (the listener is closed, its
// queue full) makes Transaction return an error wrapping an
// *events.ListenerError although the transaction committed, as an
// operation outside a transaction does. The outbox needs none of this: its
// events are stored in the changed document by the same write, so they
// commit or abort with it.
//
// A Transaction called with a context of another one joins it (as
// Spring's REQUIRED propagation does): fn runs in the outer transaction,
// its events wait for the outer commit, and an error of fn aborts the
// whole transaction even when the outer body goes on and returns nil. A
// context carrying a transaction Transaction did not start, or one whose
// transaction has ended, is refused. If fn aborts the transaction itself
// (AbortTransaction on the context's session) and returns nil, Transaction
// returns nil and drops the events.
//
// On a server without transactions Transaction returns an error wrapping
// ErrNoTransactions that names the server, without running fn. It asks
// the server once per client (buildInfo and hello).
func Transaction(ctx context.Context, client *mongo.Client, fn func(ctx context.Context) error, opts ...*options.TransactionOptions) error {
	if ctx == nil || fn == nil {
		return fmt.Errorf("repo: Transaction needs a context and a function: %w", ErrInvalidArgument)
	}
	if client == nil {
		_, c, _, err := mgm.DefaultConfigs()
		if err != nil {
			return fmt.Errorf("repo: Transaction with a nil client: %w", ErrNotConfigured)
		}
		client = c
	}
	if tx, _ := ctx.Value(txKey{}).(*txState); tx != nil {
		return tx.join(ctx, client, fn)
	}
	if s := mongo.SessionFromContext(ctx); s != nil && transactionRunning(s) {
		return fmt.Errorf("repo: Transaction: the context carries a transaction that repo.Transaction did not start, whose commit its events could not wait for; run the body directly, or start the transaction with repo.Transaction: %w", ErrInvalidArgument)
	}
	sup, err := serverinfo.Transactions(ctx, client)
	if err != nil {
		return fmt.Errorf("repo: Transaction: %w", err)
	}
	if !sup.OK {
		return fmt.Errorf("repo: Transaction refused, the server is %s: %w", sup.Server, ErrNoTransactions)
	}
	return run(ctx, client, fn, opts)
}

// run starts the session and runs fn in its transaction, holding the async
// listeners' events of each run of fn until the commit.
func run(ctx context.Context, client *mongo.Client, fn func(context.Context) error, opts []*options.TransactionOptions) error {
	sess, err := client.StartSession()
	if err != nil {
		return fmt.Errorf("repo: Transaction: %w", err)
	}
	defer sess.EndSession(context.WithoutCancel(ctx))
	var held *async.Held
	var tx *txState
	var leftOpen bool // the last run of fn left its transaction for the driver to commit
	_, err = sess.WithTransaction(ctx, func(sc mongo.SessionContext) (any, error) {
		if held != nil { // a retry: the last run's events go with its transaction
			held.Discard()
			tx.ended.Store(true)
		}
		var hctx context.Context
		hctx, held = async.Hold(sc)
		tx = &txState{client: client}
		err := fn(context.WithValue(hctx, txKey{}, tx))
		if f := tx.failed.Load(); err == nil && f != nil {
			err = fmt.Errorf("repo: a nested Transaction failed, so the whole transaction aborts: %w", *f)
		}
		leftOpen = err == nil && transactionRunning(sess)
		return nil, err
	}, opts...)
	if tx != nil {
		tx.ended.Store(true)
	}
	if err != nil || !committed(sess, leftOpen) {
		if held != nil {
			held.Discard()
		}
		return err
	}
	if err := held.Release(ctx); err != nil {
		return fmt.Errorf("repo: the transaction committed, but not all its events reached their async listeners: %w", err)
	}
	return nil
}

// join runs fn in the transaction tx, for a Transaction nested in another.
func (tx *txState) join(ctx context.Context, client *mongo.Client, fn func(context.Context) error) error {
	if tx.ended.Load() {
		return fmt.Errorf("repo: Transaction: the context's transaction has ended: %w", ErrInvalidArgument)
	}
	if client != tx.client {
		return fmt.Errorf("repo: Transaction: the context's transaction is on another client; a transaction spans one client: %w", ErrInvalidArgument)
	}
	err := fn(ctx)
	if err != nil {
		tx.failed.CompareAndSwap(nil, &err)
	}
	return err
}
