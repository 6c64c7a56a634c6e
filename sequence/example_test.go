package sequence_test

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/sequence"
)

// An allocator used alone, for invoice numbers without any model.
func ExampleAllocator_Next() {
	ctx := context.Background()
	srv, err := mongotest.NewServer(ctx)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := srv.Client(ctx)
	if err != nil {
		panic(err)
	}
	defer client.Disconnect(ctx)
	db := client.Database(mongotest.UniqueName("example"))
	defer db.Drop(ctx)

	alloc, err := sequence.New(db)
	if err != nil {
		panic(err)
	}
	invoices, err := alloc.Sequence("invoices", sequence.Start(1000), sequence.Batch(50))
	if err != nil {
		panic(err)
	}
	for range 3 {
		n, err := invoices.Next(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(n)
	}
	// Output:
	// 1000
	// 1001
	// 1002
}
