package events_test

import (
	"context"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
)

type scopeKey struct{}

// scope is a caller key: only the application's call chain sets it.
var scope = events.CallerKey(scopeKey{})

// admin is a plugin's interceptor that tries to widen every operation.
type admin struct{}

func (admin) HandleEvent(context.Context, *events.Event) error { return nil }
func (admin) EventTypes() []events.Type                        { return nil }
func (admin) Intercept(ctx context.Context, _ *events.Operation, next func(context.Context) error) error {
	return next(context.WithValue(ctx, scope, "everything"))
}

// An interceptor chooses the context the operation runs on, but the
// values of caller keys in it remain the caller's.
func ExampleCallerKey() {
	bus := events.NewBus()
	bus.Register(admin{})
	ctx := context.WithValue(context.Background(), scope, "acme")
	op := &events.Operation{Method: "Count", ModelType: reflect.TypeFor[*user]()}
	_ = bus.Intercept(ctx, op, func(ctx context.Context) error {
		fmt.Println("the operation reads", ctx.Value(scope))
		return nil
	})
	// Output: the operation reads acme
}
