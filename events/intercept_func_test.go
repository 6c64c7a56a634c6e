package events_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An InterceptorFunc registers in one line and sees each operation begin
// and end. A repository calls bus.Intercept around every method; here it
// is called directly, with the Operation a repository would pass.
func ExampleInterceptorFunc() {
	bus := events.NewBus()
	bus.Register(events.InterceptorFunc(func(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
		fmt.Println("begin", o.Method, o.Collection)
		err := next(ctx)
		fmt.Println("end", o.Method, o.Inserted, err)
		return err
	}))
	o := &events.Operation{Method: "Insert", Op: events.OpInsert, Collection: "users"}
	err := bus.Intercept(context.Background(), o, func(context.Context) error {
		o.Inserted = 1 // the operation itself
		return nil
	})
	fmt.Println("returned", err)
	// Output:
	// begin Insert users
	// end Insert 1 <nil>
	// returned <nil>
}

// TestInterceptorFunc: the adapter intercepts the operations of the model
// ForModel names, and only those, handles no event (so that a bus with
// only it publishes to nobody), and fails an operation with its error.
func TestInterceptorFunc(t *testing.T) {
	bus := events.NewBus()
	var seen []string
	refuse := errors.New("refused")
	bus.Register(events.InterceptorFunc(func(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
		seen = append(seen, o.Method)
		if o.Method == "DeleteMany" {
			return refuse
		}
		return next(ctx)
	}), events.ForModel[*order]())
	orderType := reflect.TypeFor[*order]()

	assert.True(t, bus.Intercepts(orderType))
	assert.False(t, bus.Intercepts(userType), "ForModel restricts it")
	for typ := events.BeforeConvert; typ <= events.AfterUpdate; typ++ {
		assert.False(t, bus.Handles(typ, orderType), "it handles no %v", typ)
	}

	ran := 0
	run := func(context.Context) error { ran++; return nil }
	require.NoError(t, bus.Intercept(context.Background(), &events.Operation{Method: "Insert", ModelType: orderType}, run))
	err := bus.Intercept(context.Background(), &events.Operation{Method: "DeleteMany", ModelType: orderType}, run)
	require.ErrorIs(t, err, refuse)
	require.NoError(t, bus.Intercept(context.Background(), &events.Operation{Method: "Count", ModelType: userType}, run))
	assert.Equal(t, []string{"Insert", "DeleteMany"}, seen)
	assert.Equal(t, 2, ran, "the refused operation did not run")
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave, ModelType: orderType}))
}
