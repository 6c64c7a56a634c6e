package events_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type user struct{ Name string }
type order struct{ No int }

var userType, orderType = reflect.TypeFor[*user](), reflect.TypeFor[*order]()

func record(log *[]string, name string) events.Listener {
	return events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		*log = append(*log, name+":"+e.Type.String())
		return nil
	})
}

func TestOrderThenRegistration(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(record(&log, "late"), events.Order(10))
	bus.Register(record(&log, "a"))
	bus.Register(record(&log, "early"), events.Order(-5))
	bus.Register(record(&log, "b"))
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave, ModelType: userType}))
	assert.Equal(t, []string{"early:BeforeSave", "a:BeforeSave", "b:BeforeSave", "late:BeforeSave"}, log)
}

func TestTypeAndModelFiltering(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(record(&log, "all"))
	bus.Register(record(&log, "users"), events.ForModel[*user]())
	bus.Register(record(&log, "saves"), events.On(events.BeforeSave, events.AfterSave))
	var typed []string
	bus.Register(events.TypedFunc(func(_ context.Context, e *events.Event, u *user) error {
		typed = append(typed, u.Name)
		return nil
	}), events.ForModel[*user]())
	ctx := context.Background()
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterLoad, ModelType: orderType}))
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterSave, ModelType: userType, Model: &user{Name: "zwt"}}))
	assert.Equal(t, []string{"all:AfterLoad", "all:AfterSave", "users:AfterSave", "saves:AfterSave"}, log)
	assert.Equal(t, []string{"zwt"}, typed)
}

func TestUnregister(t *testing.T) {
	bus := events.NewBus()
	var log []string
	stop := bus.Register(record(&log, "x"))
	bus.Register(record(&log, "y"))
	assert.True(t, stop())
	assert.False(t, stop(), "a second call finds nothing")
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeDelete}))
	assert.Equal(t, []string{"y:BeforeDelete"}, log)
	assert.Equal(t, 1, bus.Len())
}

// TestPolicyStays: a policy's unregister function removes nothing, so a
// repository that relied on the policy keeps it for as long as it lives.
func TestPolicyStays(t *testing.T) {
	bus := events.NewBus()
	var log []string
	stopTyped := bus.Register(policy{record(&log, "typed").(events.ListenerFunc)})
	stopOption := bus.Register(record(&log, "option"), events.AsPolicy())
	assert.False(t, stopTyped(), "a policy is not removed")
	assert.False(t, stopOption(), "nor one registered with AsPolicy")
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeQuery}))
	assert.Equal(t, []string{"typed:BeforeQuery", "option:BeforeQuery"}, log)
	assert.Equal(t, 2, bus.Len())
}

var errNope = errors.New("nope")

func TestErrorsStopAndWrap(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return errNope }))
	bus.Register(record(&log, "after"))
	err := bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave, Op: events.OpInsert, Collection: "users", ModelType: userType})
	require.Error(t, err)
	assert.ErrorIs(t, err, errNope)
	assert.ErrorIs(t, err, events.ErrAborted)
	var le *events.ListenerError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, events.BeforeSave, le.Type)
	assert.Contains(t, err.Error(), "BeforeSave")
	assert.Contains(t, err.Error(), `"users"`)
	assert.Contains(t, err.Error(), "*events_test.user")
	assert.Empty(t, log, "later listeners do not run")

	err = bus.Publish(context.Background(), &events.Event{Type: events.AfterSave})
	assert.ErrorIs(t, err, errNope)
	assert.NotErrorIs(t, err, events.ErrAborted, "an After* error is not an abort")
	assert.Contains(t, err.Error(), "the write was done")
}

func TestPanicIsRecovered(t *testing.T) {
	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { panic("boom") }))
	err := bus.Publish(context.Background(), &events.Event{Type: events.BeforeConvert})
	assert.ErrorIs(t, err, events.ErrPanic)
	assert.ErrorIs(t, err, events.ErrAborted)
	var pe *events.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "boom", pe.Value)
	assert.Contains(t, string(pe.Stack), "TestPanicIsRecovered")

	bus = events.NewBus()
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { panic(errNope) }))
	assert.ErrorIs(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave}), errNope)
}

type typed struct{}

func (typed) EventTypes() []events.Type                        { return []events.Type{events.AfterLoad} }
func (typed) HandleEvent(context.Context, *events.Event) error { return errNope }

func TestEventTyperLimitsTypes(t *testing.T) {
	bus := events.NewBus()
	bus.Register(typed{})
	assert.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave}))
	assert.ErrorIs(t, bus.Publish(context.Background(), &events.Event{Type: events.AfterLoad}), errNope)
}

func TestUnmatchedPublishAllocatesNothing(t *testing.T) {
	bus := events.NewBus()
	for range 3 {
		bus.Register(record(new([]string), "orders"), events.ForModel[*order]())
	}
	bus.Register(record(new([]string), "deletes"), events.On(events.AfterDelete))
	e := &events.Event{Type: events.BeforeSave, ModelType: userType}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := bus.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
	var nilBus *events.Bus
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = nilBus.Publish(ctx, e) }))
}

// TestConcurrentPublishAndRegister is for the race detector: publishing
// never blocks on, or races with, registering and unregistering.
func TestConcurrentPublishAndRegister(t *testing.T) {
	bus := events.NewBus()
	var wg sync.WaitGroup
	var mu sync.Mutex
	calls := 0
	count := events.ListenerFunc(func(context.Context, *events.Event) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return nil
	})
	bus.Register(count)
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 500 {
				stop := bus.Register(count, events.Order(i))
				stop()
			}
		}()
		go func() {
			defer wg.Done()
			for range 500 {
				if err := bus.Publish(context.Background(), &events.Event{Type: events.AfterSave}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	assert.GreaterOrEqual(t, calls, 2000, "the permanent listener saw every publish")
	assert.Equal(t, 1, bus.Len())
}

func TestDisabledContext(t *testing.T) {
	ctx := context.Background()
	assert.True(t, events.Enabled(ctx))
	assert.False(t, events.Enabled(events.WithoutEvents(ctx)))
}

func TestTypeNames(t *testing.T) {
	var names []string
	for typ := events.BeforeConvert; typ <= events.AfterDelete; typ++ {
		names = append(names, typ.String())
	}
	assert.Equal(t, []string{"BeforeConvert", "BeforeSave", "AfterSave", "AfterLoad", "AfterConvert", "BeforeDelete", "AfterDelete"}, names)
	assert.Equal(t, "Type(99)", events.Type(99).String())
	assert.Equal(t, "InsertMany", events.OpInsertMany.String())
}

func BenchmarkPublishUnmatched(b *testing.B) {
	bus := events.NewBus()
	for range 3 {
		bus.Register(record(new([]string), "orders"), events.ForModel[*order]())
	}
	e := &events.Event{Type: events.BeforeSave, ModelType: userType}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = bus.Publish(ctx, e)
	}
}

func BenchmarkPublishMatched(b *testing.B) {
	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.ForModel[*user]())
	e := &events.Event{Type: events.BeforeSave, ModelType: userType}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = bus.Publish(ctx, e)
	}
}

func ExampleBus() {
	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		fmt.Println("any model:", e.Type, e.Collection)
		return nil
	}))
	bus.Register(events.TypedFunc(func(_ context.Context, e *events.Event, u *user) error {
		fmt.Println("users only:", u.Name)
		return nil
	}), events.ForModel[*user](), events.On(events.BeforeSave), events.Order(-1))

	_ = bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave, Collection: "users", ModelType: userType, Model: &user{Name: "zwt"}})
	_ = bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave, Collection: "orders", ModelType: orderType, Model: &order{No: 1}})
	// Output:
	// users only: zwt
	// any model: BeforeSave users
	// any model: BeforeSave orders
}

type policy struct{ events.ListenerFunc }

func (policy) EnforcesPolicy() {}

// TestPoliciesAreClosestToTheDatabase: a policy runs after every other
// listener on Before* events, whatever their Order, before them on After*
// events, and alone when the event is Quiet.
func TestPoliciesAreClosestToTheDatabase(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(policy{record(&log, "policy").(events.ListenerFunc)})
	bus.Register(record(&log, "option-policy"), events.AsPolicy(), events.Order(-1))
	bus.Register(record(&log, "last"), events.Order(1<<30))
	bus.Register(record(&log, "first"), events.Order(-1<<30))
	assert.Equal(t, 4, bus.Len())
	policies := 0
	for _, r := range bus.Listeners(nil) {
		if r.Policy {
			policies++
		}
	}
	assert.Equal(t, 2, policies)

	ctx := context.Background()
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.BeforeQuery}))
	assert.Equal(t, []string{"first:BeforeQuery", "last:BeforeQuery", "option-policy:BeforeQuery", "policy:BeforeQuery"}, log)
	log = nil
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterLoad}))
	assert.Equal(t, []string{"option-policy:AfterLoad", "policy:AfterLoad", "first:AfterLoad", "last:AfterLoad"}, log)
	log = nil
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.BeforeSave, Quiet: true}))
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterSave, Quiet: true}))
	assert.Equal(t, []string{"option-policy:BeforeSave", "policy:BeforeSave", "option-policy:AfterSave", "policy:AfterSave"}, log)
}

type checkedPolicy struct {
	events.ListenerFunc
	check func(*events.Event) error
}

func (checkedPolicy) EnforcesPolicy()                                  {}
func (c checkedPolicy) Check(_ context.Context, e *events.Event) error { return c.check(e) }

// TestChecksRunAfterEveryListener: a policy's Check sees what every
// listener, later policies included, left, and its error aborts.
func TestChecksRunAfterEveryListener(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(checkedPolicy{
		ListenerFunc: func(_ context.Context, e *events.Event) error {
			e.Filter = "policy"
			log = append(log, "handle")
			return nil
		},
		check: func(e *events.Event) error {
			log = append(log, "check:"+e.Filter.(string))
			if e.Filter != "policy" {
				return errors.New("undone")
			}
			return nil
		},
	})
	bus.Register(record(&log, "later"), events.AsPolicy(), events.Order(5))
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeQuery}))
	assert.Equal(t, []string{"handle", "later:BeforeQuery", "check:policy"}, log)

	log = nil
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.AfterLoad}))
	assert.NotContains(t, log, "check:policy", "no checks after the fact")

	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error { e.Filter = "undone"; return nil }),
		events.AsPolicy(), events.Order(10))
	err := bus.Publish(context.Background(), &events.Event{Type: events.BeforeQuery, Quiet: true})
	require.ErrorIs(t, err, events.ErrAborted, "a failed check aborts, with events off too")
	assert.ErrorContains(t, err, "undone")
}
