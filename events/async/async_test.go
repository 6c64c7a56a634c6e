package async_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/async"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

type user struct{ Name string }

var userType = reflect.TypeFor[*user]()

// policy is a listener that is a policy.
type policy struct{ events.ListenerFunc }

func (policy) EnforcesPolicy() {}

// collect is a listener that keeps every event it is given, and the
// error handler's reports, for an async Listener.
type collect struct {
	mu      sync.Mutex
	got     []*events.Event
	reports []error
	gate    chan struct{} // when set, each event waits for gate to be closed
	started chan struct{} // when set, told of each event as it begins
}

func (c *collect) HandleEvent(ctx context.Context, e *events.Event) error {
	if c.started != nil {
		c.started <- struct{}{}
	}
	if c.gate != nil {
		<-c.gate
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, e)
	return nil
}

func (c *collect) report(_ context.Context, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reports = append(c.reports, err)
}

func (c *collect) indexes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(c.got))
	for i, e := range c.got {
		out[i] = e.Index
	}
	return out
}

func (c *collect) errs() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.reports...)
}

func saved(i int) *events.Event {
	return &events.Event{Type: events.AfterSave, Op: events.OpInsert, Collection: "users", ModelType: userType, Index: i}
}

// goRun runs f on a goroutine and returns the channel its error will come on.
func goRun(f func() error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- f() }()
	return c
}

func closeNow(t *testing.T, a *async.Listener) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Close(ctx))
}

// Each publisher's events reach the listener in the order it published
// them, with eight publishers at once reusing one Event each, as a
// repository does.
func TestAsyncPublishOrder(t *testing.T) {
	const publishers, each = 8, 500
	c := &collect{}
	a := async.New(c, async.WithQueue(16), async.WithErrorHandler(c.report))
	bus := events.NewBus()
	bus.Register(a)
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := saved(0)
			e.Collection = string(rune('a' + p))
			for i := range each {
				e.Index = i
				assert.NoError(t, bus.Publish(context.Background(), e))
			}
		}()
	}
	wg.Wait()
	closeNow(t, a)

	require.Len(t, c.got, publishers*each)
	next := map[string]int{}
	for _, e := range c.got {
		require.Equal(t, next[e.Collection], e.Index, "publisher %s: out of order", e.Collection)
		next[e.Collection]++
	}
	assert.Empty(t, c.errs())
}

// The listener may keep the event: the publisher's reuse of it, and of
// its Document, Batch and Collation, does not reach the copy.
func TestAsyncCopiesEvent(t *testing.T) {
	c := &collect{gate: make(chan struct{})}
	a := async.New(c)
	doc, err := bson.Marshal(bson.D{{Key: "name", Value: "ann"}})
	require.NoError(t, err)
	first := &user{Name: "first"}
	e := saved(0)
	e.Document = doc
	e.Batch = []any{first, &user{Name: "second"}}
	e.Collation = &options.Collation{Locale: "en"}
	e.Type = events.BeforeSave // the additions of the write
	e.Keep("note")
	e.AddGuard(bson.E{Key: "state", Value: "open"}, errors.New("closed"))
	e.Type = events.AfterSave
	require.NoError(t, a.HandleEvent(context.Background(), e))

	// The repository reuses the Event for the next one; the cursor reuses
	// the buffer of the document.
	e.Type, e.Collection, e.Index = events.AfterDelete, "orders", 7
	copy(doc[len(doc)-4:], "bob\x00")
	e.Batch[0] = &user{Name: "replaced"}
	e.Collation.Locale = "fr"
	e.Additions().Keep[0] = "other"
	e.Additions().Guards[0].Cond.Value = "closed"
	close(c.gate)
	closeNow(t, a)

	require.Len(t, c.got, 1)
	got := c.got[0]
	assert.Equal(t, events.AfterSave, got.Type)
	assert.Equal(t, "users", got.Collection)
	assert.Equal(t, 0, got.Index)
	assert.Equal(t, "ann", got.Document.Lookup("name").StringValue())
	assert.Same(t, first, got.Batch[0], "the models themselves are the caller's")
	assert.Equal(t, "en", got.Collation.Locale)
	assert.Equal(t, []string{"note"}, got.Additions().Keep)
	assert.Equal(t, "open", got.Additions().Guards[0].Cond.Value)
}

// fill registers c, whose events wait for its gate, behind an
// AsyncListener with a queue of n, and publishes 1 + n events: one the
// listener holds and n that fill the queue.
func fill(t *testing.T, c *collect, n int, opts ...async.Option) (*events.Bus, *async.Listener) {
	t.Helper()
	c.gate, c.started = make(chan struct{}), make(chan struct{}, 100)
	a := async.New(c, append([]async.Option{async.WithQueue(n), async.WithErrorHandler(c.report)}, opts...)...)
	bus := events.NewBus()
	bus.Register(a)
	require.NoError(t, bus.Publish(context.Background(), saved(0)))
	<-c.started // the listener holds event 0
	for i := 1; i <= n; i++ {
		require.NoError(t, bus.Publish(context.Background(), saved(i)))
	}
	require.Equal(t, n, a.Queued())
	return bus, a
}

// By default a full queue makes the publisher wait for room, until its
// context is done.
func TestAsyncFullQueueBlocks(t *testing.T) {
	c := &collect{}
	bus, a := fill(t, c, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var err error
	select {
	case err = <-goRun(func() error { return bus.Publish(ctx, saved(-1)) }):
	case <-time.After(10 * time.Second):
		t.Fatal("Publish did not return at its deadline")
	}
	require.ErrorIs(t, err, context.DeadlineExceeded, "the publisher waited for room until its deadline")
	assert.NotErrorIs(t, err, events.ErrAborted, "an After* error: the write was done")

	waited := goRun(func() error { return bus.Publish(context.Background(), saved(3)) })
	select {
	case err := <-waited:
		t.Fatalf("Publish returned %v with the queue full", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(c.gate)
	require.NoError(t, <-waited)
	closeNow(t, a)
	assert.Equal(t, []int{0, 1, 2, 3}, c.indexes())
	assert.Zero(t, a.Dropped())
}

// OverflowDrop drops the events that find the queue full, and counts them.
func TestAsyncFullQueueDrops(t *testing.T) {
	c := &collect{}
	bus, a := fill(t, c, 2, async.WithOverflow(async.OverflowDrop))
	for i := 3; i < 6; i++ {
		require.NoError(t, bus.Publish(context.Background(), saved(i)))
	}
	assert.Equal(t, uint64(3), a.Dropped())
	close(c.gate)
	closeNow(t, a)
	assert.Equal(t, []int{0, 1, 2}, c.indexes())
	assert.Empty(t, c.errs())
}

// OverflowFail returns ErrQueueFull, through a *ListenerError that names
// the event, to the operation's caller.
func TestAsyncFullQueueFails(t *testing.T) {
	c := &collect{}
	bus, a := fill(t, c, 2, async.WithOverflow(async.OverflowFail))
	err := bus.Publish(context.Background(), saved(3))
	require.ErrorIs(t, err, async.ErrQueueFull)
	var le *events.ListenerError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, events.AfterSave, le.Type)
	assert.Contains(t, err.Error(), "failed after Insert")
	assert.Zero(t, a.Dropped())
	close(c.gate)
	closeNow(t, a)
	assert.Equal(t, []int{0, 1, 2}, c.indexes())
}

// A panic of the listener is recovered and reported, and the events after
// it are delivered.
func TestAsyncRecoversPanic(t *testing.T) {
	c := &collect{}
	a := async.New(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		switch e.Index {
		case 1:
			panic("boom")
		case 2:
			return errors.New("refused")
		}
		return c.HandleEvent(ctx, e)
	}), async.WithErrorHandler(c.report))
	for i := range 4 {
		require.NoError(t, a.HandleEvent(context.Background(), saved(i)))
	}
	closeNow(t, a)
	assert.Equal(t, []int{0, 3}, c.indexes())

	errs := c.errs()
	require.Len(t, errs, 2)
	var pe *events.PanicError
	require.ErrorAs(t, errs[0], &pe)
	assert.Equal(t, "boom", pe.Value)
	assert.ErrorIs(t, errs[0], events.ErrPanic)
	var le *events.ListenerError
	require.ErrorAs(t, errs[0], &le)
	assert.Equal(t, events.AfterSave, le.Type)
	assert.Equal(t, "users", le.Collection)
	assert.IsType(t, events.ListenerFunc(nil), le.Listener, "the listener, not the AsyncListener")
	assert.EqualError(t, errs[1], `events: AfterSave listener failed after Insert of *async_test.user in collection "users" (the write was done): refused`)
}

// Without an error handler, a panic is logged with slog.
func TestAsyncLogsPanic(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	a := async.New(events.ListenerFunc(func(context.Context, *events.Event) error { panic("boom") }))
	require.NoError(t, a.HandleEvent(context.Background(), saved(0)))
	closeNow(t, a)
	assert.Contains(t, buf.String(), `level=ERROR msg="async: listener" err="events: AfterSave listener failed after Insert`)
	assert.Contains(t, buf.String(), "listener panicked: boom")
}

// Close delivers every queued event before it returns, and then refuses
// new ones.
func TestAsyncCloseDrains(t *testing.T) {
	c := &collect{}
	a := async.New(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		time.Sleep(time.Millisecond)
		return c.HandleEvent(ctx, e)
	}), async.WithQueue(100))
	bus := events.NewBus()
	bus.Register(a)
	for i := range 50 {
		require.NoError(t, bus.Publish(context.Background(), saved(i)))
	}
	closeNow(t, a)
	assert.Len(t, c.indexes(), 50)

	err := bus.Publish(context.Background(), saved(50))
	require.ErrorIs(t, err, async.ErrClosed)
	assert.Len(t, c.indexes(), 50)
	require.NoError(t, a.Close(context.Background()), "a second Close")
}

// Close gives up at the context's deadline: the listener's context is
// cancelled, the events still queued are discarded, and a publisher
// waiting for room is told the listener is closed.
func TestAsyncCloseDeadline(t *testing.T) {
	c := &collect{}
	cancelled := make(chan error, 1)
	started := make(chan struct{})
	a := async.New(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		if e.Index == 0 {
			close(started)
			<-ctx.Done()
			cancelled <- ctx.Err()
		}
		return c.HandleEvent(ctx, e)
	}), async.WithQueue(3))
	for i := range 4 {
		require.NoError(t, a.HandleEvent(context.Background(), saved(i)))
	}
	<-started
	waiting := goRun(func() error { return a.HandleEvent(context.Background(), saved(4)) })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	select {
	case err := <-goRun(func() error { return a.Close(ctx) }):
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, "async: listener closed with 3 events undelivered: context deadline exceeded")
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return at its deadline")
	}
	require.ErrorIs(t, <-waiting, async.ErrClosed)
	require.ErrorIs(t, <-cancelled, context.Canceled, "the listener's context")
	closeNow(t, a) // waits for the worker
	assert.Equal(t, []int{0}, c.indexes(), "the queued events were discarded")
}

// The listener's context has the publisher's values, and outlives the
// publisher's cancellation.
func TestAsyncContext(t *testing.T) {
	type key struct{}
	got := make(chan error, 1)
	a := async.New(events.ListenerFunc(func(ctx context.Context, _ *events.Event) error {
		if ctx.Value(key{}) != "acme" {
			got <- errors.New("the publisher's value is missing")
		} else {
			got <- ctx.Err()
		}
		return nil
	}))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "acme"))
	require.NoError(t, a.HandleEvent(ctx, saved(0)))
	cancel()
	closeNow(t, a)
	assert.NoError(t, <-got)
}

// Registration refuses Before* types, even when On asks for them, and
// says so; a policy is refused altogether.
func TestAsyncRefusesBefore(t *testing.T) {
	c := &collect{}
	a := async.New(c, async.WithErrorHandler(c.report))
	bus := events.NewBus()
	unregister := bus.Register(a, events.On(events.BeforeSave, events.BeforeQuery, events.AfterSave))
	errs := c.errs()
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], async.ErrSyncOnly)
	assert.Contains(t, errs[0].Error(), "refused BeforeSave, BeforeQuery")

	assert.False(t, bus.Handles(events.BeforeSave, userType), "no Before* type is registered")
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.BeforeSave, ModelType: userType}))
	require.NoError(t, bus.Publish(context.Background(), saved(1)))

	err := a.HandleEvent(context.Background(), &events.Event{Type: events.BeforeUpdate})
	require.ErrorIs(t, err, async.ErrSyncOnly)
	assert.Contains(t, err.Error(), "BeforeUpdate refused by an async *async_test.collect")
	require.True(t, unregister())
	closeNow(t, a)
	assert.Equal(t, []int{1}, c.indexes(), "only the After* event")

	// Without On, the listener's own After* types.
	typed := async.New(typedListener{c, []events.Type{events.BeforeSave, events.AfterDelete}})
	assert.Equal(t, []events.Type{events.AfterDelete}, typed.EventTypes())
	closeNow(t, typed)
	assert.Equal(t, []events.Type{events.AfterSave, events.AfterLoad, events.AfterConvert, events.AfterDelete, events.AfterUpdate}, a.EventTypes())

	// AsPolicy: registered as an ordinary listener, so that it can be
	// unregistered before Close.
	ac := &collect{}
	ap := async.New(ac, async.WithErrorHandler(ac.report))
	unregisterAP := bus.Register(ap, events.AsPolicy())
	require.Len(t, ac.errs(), 1)
	assert.ErrorIs(t, ac.errs()[0], async.ErrSyncOnly)
	assert.Contains(t, ac.errs()[0].Error(), "as a policy refused")
	require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: events.AfterSave, Quiet: true}))
	assert.True(t, unregisterAP(), "not a policy: it can be removed")
	closeNow(t, ap)
	assert.Empty(t, ac.indexes(), "a Quiet event reaches policies only")

	pc := &collect{}
	p := async.New(policy{pc.HandleEvent}, async.WithErrorHandler(pc.report))
	bus.Register(p)
	require.NoError(t, bus.Publish(context.Background(), saved(2)))
	closeNow(t, p)
	assert.Empty(t, pc.indexes())
	require.Len(t, pc.errs(), 1)
	assert.ErrorIs(t, pc.errs()[0], async.ErrSyncOnly)
	assert.Contains(t, pc.errs()[0].Error(), "a policy")
}

type typedListener struct {
	events.Listener
	types []events.Type
}

func (l typedListener) EventTypes() []events.Type { return l.types }
