package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/lifecycle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type onlySaves struct {
	lifecycle.Base
	log []string
}

func (l *onlySaves) OnBeforeSave(_ context.Context, e *events.Event) error {
	l.log = append(l.log, "save "+e.Collection)
	return nil
}

func TestLifecycleBase(t *testing.T) {
	bus := events.NewBus()
	l := &onlySaves{}
	bus.Register(lifecycle.Adapt(l))
	ctx := context.Background()
	for typ := events.BeforeConvert; typ <= events.AfterDelete; typ++ {
		require.NoError(t, bus.Publish(ctx, &events.Event{Type: typ, Collection: "users"}))
	}
	assert.Equal(t, []string{"save users"}, l.log, "only the overridden method runs; Base's are no-ops")
}

func ExampleAdapt() {
	bus := events.NewBus()
	bus.Register(lifecycle.Adapt(&auditTrail{}))
	err := bus.Publish(context.Background(), &events.Event{Type: events.BeforeDelete, Collection: "users"})
	fmt.Println(err)
	fmt.Println(errors.Is(err, events.ErrAborted))
	// Output:
	// events: BeforeDelete listener aborted in collection "users": deletes are disabled
	// true
}

// auditTrail refuses deletes and ignores every other event.
type auditTrail struct{ lifecycle.Base }

func (*auditTrail) OnBeforeDelete(context.Context, *events.Event) error {
	return errors.New("deletes are disabled")
}
