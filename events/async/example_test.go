package async_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/async"
)

// New runs a slow After* listener off the operation's path. Close
// delivers what is queued; registration refuses the Before* type that On
// asks for, and says so to the error handler.
func ExampleNew() {
	ctx := context.Background()
	answer := make(chan struct{}) // the mail server is slow to answer
	welcome := events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		<-answer
		fmt.Println("welcome mail", e.Index)
		return nil
	})
	mail := async.New(welcome, async.WithQueue(100),
		async.WithErrorHandler(func(_ context.Context, err error) { fmt.Println("reported:", err) }))

	bus := events.NewBus()
	unregister := bus.Register(mail, events.On(events.BeforeSave, events.AfterSave))
	for i := range 3 {
		_ = bus.Publish(ctx, &events.Event{Type: events.AfterSave, Op: events.OpInsert, Collection: "users", Index: i})
	}
	fmt.Println("published")
	close(answer)

	unregister()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := mail.Close(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// reported: async: registration of events.ListenerFunc refused BeforeSave: async: After* events only; a Before* event can veto the operation, so its listeners run synchronously
	// published
	// welcome mail 0
	// welcome mail 1
	// welcome mail 2
}
