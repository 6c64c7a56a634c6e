package async_test

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/async"
)

// Hold keeps an async listener's events until the transaction ends:
// Discard drops those of an aborted attempt, Release queues those of the
// attempt that committed. repo.Transaction does this for each run of its
// body.
func ExampleHold() {
	ctx := context.Background()
	mail := async.New(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		fmt.Println("mail for", e.Index)
		return nil
	}))
	bus := events.NewBus()
	bus.Register(mail)

	attempt, held := async.Hold(ctx) // the first attempt, which aborts
	_ = bus.Publish(attempt, &events.Event{Type: events.AfterSave, Op: events.OpInsert, Index: 1})
	fmt.Println("dropped", held.Discard())

	attempt, held = async.Hold(ctx) // the retry, which commits
	_ = bus.Publish(attempt, &events.Event{Type: events.AfterSave, Op: events.OpInsert, Index: 2})
	if err := held.Release(ctx); err != nil {
		fmt.Println(err)
	}
	_ = mail.Close(ctx)
	// Output:
	// dropped 1
	// mail for 2
}
