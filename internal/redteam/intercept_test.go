package redteam_test

// Interceptors (events.Interceptor) and listener tracers
// (events.ListenerTracer) are registered on the bus like any listener, and
// choose the context an operation, or a listener, runs on.

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// widener is a plugin's "metrics" interceptor that runs every operation
// as an admin: all tenants, deleted documents included, deletes for real.
type widener struct{}

func (widener) HandleEvent(context.Context, *events.Event) error { return nil }
func (widener) EventTypes() []events.Type                        { return nil }
func (widener) Intercept(ctx context.Context, _ *events.Operation, next func(context.Context) error) error {
	return next(softdelete.HardDelete(softdelete.WithDeleted(tenancy.AllTenants(ctx))))
}

func TestDefendInterceptorWidensContext(t *testing.T) {
	w := wire(t)
	w.seed(t)
	gone := &Note{Text: "gone"}
	require.NoError(t, w.notes.Insert(asGlobex, gone))
	require.NoError(t, w.notes.Delete(asGlobex, gone))
	w.bus.Register(widener{})

	n, err := w.accounts.Count(ctx, bson.D{}) // no tenant at all
	if err == nil {
		assert.LessOrEqual(t, n, int64(0), "a request without a tenant counted every tenant's accounts")
	}
	notes, err := w.notes.Find(asAcme, bson.D{})
	if err == nil {
		assert.Empty(t, notes, "acme read globex's soft-deleted note")
	}
	_, _ = w.notes.DeleteMany(asAcme, bson.D{})
	assert.Equal(t, 1, w.count(t, "notes", nil), "acme physically deleted globex's soft-deleted note without HardDelete")
}

// tracer is a plugin's listener tracer that runs each listener, policies
// included, as an admin.
type tracer struct{}

func (tracer) HandleEvent(context.Context, *events.Event) error { return nil }
func (tracer) EventTypes() []events.Type                        { return nil }
func (tracer) TraceListener(ctx context.Context, _ *events.Event, _ events.Listener) (context.Context, func(error)) {
	return softdelete.HardDelete(softdelete.WithDeleted(tenancy.AllTenants(ctx))), nil
}

// The listeners, policies included, run on the tracer's context, but the
// policies' switches in it (caller keys, events.CallerKey) remain the
// operation's: everything stays confined to acme's live documents.
func TestHeldTracerWidensPolicyContext(t *testing.T) {
	w := wire(t)
	w.seed(t)
	gone := &Note{Text: "gone"}
	require.NoError(t, w.notes.Insert(asGlobex, gone))
	require.NoError(t, w.notes.Delete(asGlobex, gone))
	w.bus.Register(tracer{})
	n, err := w.accounts.Count(asAcme, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	got, err := w.accounts.Find(asAcme, bson.D{})
	require.NoError(t, err)
	assert.Len(t, got, 2)
	notes, err := w.notes.Find(asGlobex, bson.D{})
	require.NoError(t, err)
	assert.Empty(t, notes, "the soft-deleted note is hidden")
	_, err = w.notes.DeleteMany(asGlobex, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, 1, w.count(t, "notes", nil), "the soft-deleted note was removed without HardDelete")
	_, err = w.accounts.DeleteMany(asAcme, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, 2, w.count(t, "accounts", bson.D{{Key: "tenant", Value: globex}}), "acme deleted globex's accounts")
	assert.Equal(t, 0, w.count(t, "accounts", bson.D{{Key: "tenant", Value: acme}}))
	note := &Note{Text: "n"}
	require.NoError(t, w.notes.Insert(asAcme, note))
	assert.Equal(t, acme, note.Tenant, "BeforeConvert stamps the caller's tenant")
}
