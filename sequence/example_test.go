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
	invoices, err := alloc.Sequence("invoices", sequence.WithStart(1000), sequence.WithBatch(50))
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

// The counters a metrics listener reads: three numbers handed out of a
// block of ten, and the other seven given back at Close.
func ExampleAllocator_Stats() {
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

	alloc, err := sequence.New(db, sequence.WithBatch(10))
	if err != nil {
		panic(err)
	}
	for range 3 {
		if _, err := alloc.Next(ctx, "tickets"); err != nil {
			panic(err)
		}
	}
	if err := alloc.Close(ctx); err != nil {
		panic(err)
	}
	st := alloc.Stats()
	fmt.Printf("handed out %d, given back %d, reserved %d in %d block\n", st.HandedOut, st.GivenBack, st.Reserved, st.Blocks)
	// Output:
	// handed out 3, given back 7, reserved 10 in 1 block
}
