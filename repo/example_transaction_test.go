package repo_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
)

// Transaction runs repository operations in one transaction; on a server
// without transactions, such as the embedded FerretDB, it refuses before
// running the body.
func ExampleTransaction() {
	ctx := context.Background()
	db, done := exampleDB(ctx, mongotest.IgnoreEnv()) // the embedded server, whatever MONGODB_URI says
	defer done()
	client := db.Client()

	books, err := repo.New[*Book](events.NewBus(), repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	err = repo.Transaction(ctx, client, func(ctx context.Context) error {
		// The context joins the transaction: both inserts commit, or neither.
		if err := books.Insert(ctx, &Book{Title: "Dune"}); err != nil {
			return err
		}
		return books.Insert(ctx, &Book{Title: "Emma"})
	})
	fmt.Println(errors.Is(err, repo.ErrNoTransactions))
	fmt.Println(err)
	n, _ := books.Collection().CountDocuments(ctx, bson.D{})
	fmt.Println("stored:", n)
	// Output:
	// true
	// repo: Transaction refused, the server is FerretDB: repo: the server runs no multi-document transactions; they need a MongoDB replica set (4.0 or later) or sharded cluster (4.2 or later)
	// stored: 0
}
