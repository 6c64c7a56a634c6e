package redteam_test

// Policies decide from the event's metadata (Type, Op, ModelType,
// Collation), which ordinary listeners run before them and may rewrite.

import (
	"context"
	"reflect"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// A plugin sets Event.ModelType to a model without policy tags: every
// policy then looks up that model's schema, finds nothing to enforce, and
// its Check agrees.
func TestDefendPluginRewritesModelType(t *testing.T) {
	w := wire(t)
	w.seed(t)
	w.plugin(func(_ context.Context, e *events.Event) error {
		e.ModelType = reflect.TypeFor[*Plain]()
		return nil
	}, events.On(events.BeforeQuery, events.BeforeSave, events.BeforeDelete))

	// Tenancy: acme reads and deletes globex's accounts.
	got, err := w.accounts.Find(asAcme, bson.M{"tenant": globex})
	if err == nil {
		for _, a := range got {
			assert.Equal(t, acme, a.Tenant, "acme read a globex account")
		}
	}
	_, _ = w.accounts.DeleteMany(asAcme, bson.M{"tenant": globex})
	assert.Equal(t, 2, w.count(t, "accounts", bson.M{"tenant": globex}), "acme deleted globex's accounts")
	// With no tenant at all, it must fail closed.
	_, err = w.accounts.Count(ctx, bson.D{})
	assert.Error(t, err, "no tenant in the context must be refused")

	// Encryption: the document is stored with its plaintext.
	p := &Patient{Email: "ann@example.com", Notes: "PLAINTEXT-MARKER"}
	_ = w.patients.Insert(asAcme, p)
	for _, raw := range w.raw(t, "patients", nil) {
		assert.NotContains(t, string(raw), "PLAINTEXT-MARKER", "encrypted field stored in plaintext")
	}

	// Soft delete: a delete without HardDelete removes the document.
	n := &Note{Text: "keep me"}
	require.NoError(t, w.notes.Insert(events.WithoutEvents(asAcme), n)) // Quiet: only policies
	_ = w.notes.Delete(asAcme, n)
	assert.Equal(t, 1, w.count(t, "notes", nil), "a soft-deleted model was physically deleted without HardDelete")
}

// A plugin sets Event.Type of a BeforeQuery to an After* type: the bus
// then skips every policy (none handles it) and their Checks (run for
// Before* events only), and the repository sends the filter unconfined.
func TestDefendPluginRewritesEventType(t *testing.T) {
	w := wire(t)
	w.seed(t)
	w.plugin(func(_ context.Context, e *events.Event) error {
		e.Type = events.AfterLoad
		return nil
	}, events.On(events.BeforeQuery))
	n, err := w.accounts.Count(asAcme, bson.D{})
	if err == nil {
		assert.Equal(t, int64(2), n, "acme counted globex's accounts")
	}
	_, _ = w.accounts.DeleteMany(asAcme, bson.D{})
	assert.Equal(t, 2, w.count(t, "accounts", bson.M{"tenant": globex}), "acme deleted globex's accounts")
}

// A plugin sets Event.Op of a find to OpAggregate: Tenancy and SoftDelete
// then confine Event.Pipeline (nil for a find) instead of Event.Filter,
// and their Checks judge the pipeline too.
func TestDefendPluginRewritesOp(t *testing.T) {
	w := wire(t)
	w.seed(t)
	gone := &Note{Text: "gone"}
	require.NoError(t, w.notes.Insert(asGlobex, gone))
	require.NoError(t, w.notes.Delete(asGlobex, gone))
	w.plugin(func(_ context.Context, e *events.Event) error {
		if e.Op != events.OpAggregate {
			e.Op = events.OpAggregate
		}
		return nil
	}, events.On(events.BeforeQuery))
	got, err := w.accounts.Find(asAcme, bson.D{})
	if err == nil {
		for _, a := range got {
			assert.Equal(t, acme, a.Tenant, "acme read a globex account")
		}
	}
	notes, err := w.notes.Find(tenantAll(), bson.D{})
	if err == nil {
		assert.Empty(t, notes, "a soft-deleted note was read without WithDeleted")
	}
	_ = softdelete.WithDeleted
}
