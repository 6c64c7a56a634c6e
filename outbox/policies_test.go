package outbox_test

import (
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// ticket is soft-deleted and belongs to a tenant.
type ticket struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Title            string     `bson:"title"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

func policiesSetup(t *testing.T) (*repo.Repository[*ticket], *events.Bus) {
	t.Helper()
	bus := events.NewBus()
	bus.Register(outbox.New())
	bus.Register(softdelete.New())
	bus.Register(tenancy.New())
	r, err := repo.New[*ticket](bus, repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	return r, bus
}

// TestSoftDeleteStaysASoftDelete: with SoftDelete on the bus a delete
// marks the document, with its events, and keeps no tombstone; a hard
// delete keeps the document as a tombstone until its events are out.
func TestSoftDeleteStaysASoftDelete(t *testing.T) {
	tickets, _ := policiesSetup(t)
	tctx := tenancy.WithTenant(ctx, "acme")
	tk := &ticket{Title: "a"}
	require.NoError(t, tickets.Insert(tctx, tk))
	tk.Record("ticket.closed", nil)
	require.NoError(t, tickets.Delete(tctx, tk))
	coll := tickets.Collection().Collection
	var s stored
	require.NoError(t, coll.FindOne(ctx, bson.D{{Key: "_id", Value: tk.ID}}).Decode(&s))
	var raw bson.M
	require.NoError(t, coll.FindOne(ctx, bson.D{{Key: "_id", Value: tk.ID}}).Decode(&raw))
	assert.Contains(t, raw, "deletedAt", "soft-deleted")
	assert.False(t, s.Box.Gone, "no tombstone: the soft delete keeps the document")
	assert.Len(t, s.Box.Queue, 1, "with its event")
	assert.Equal(t, "tenant", s.Box.Tenant, "the tenant field, for Message.Tenant")
	back, err := tickets.FindByID(softdelete.WithDeleted(tctx), tk.ID)
	require.NoError(t, err, "WithDeleted still finds it")

	back.Record("ticket.purged", nil)
	require.NoError(t, tickets.Delete(softdelete.HardDelete(softdelete.WithDeleted(tctx)), back))
	require.NoError(t, coll.FindOne(ctx, bson.D{{Key: "_id", Value: tk.ID}}).Decode(&s))
	assert.True(t, s.Box.Gone, "a hard delete keeps a tombstone")
	assert.Len(t, s.Box.Queue, 2)
	_, err = tickets.FindByID(softdelete.WithDeleted(tctx), tk.ID)
	assert.ErrorIs(t, err, repo.ErrNotFound, "which not even WithDeleted sees")

	// The relay, a system process, sees every tenant and names each.
	other := &ticket{Title: "b"}
	other.Record("ticket.opened", nil)
	require.NoError(t, tickets.Insert(tenancy.WithTenant(ctx, "globex"), other))
	p := &recorder{}
	_, err = newRelay(t, coll.Database(), p).Drain(ctx)
	require.NoError(t, err)
	tenants := map[string]string{}
	for _, m := range p.take() {
		tenants[m.Type] = m.Tenant
	}
	assert.Equal(t, map[string]string{"ticket.closed": "acme", "ticket.purged": "acme", "ticket.opened": "globex"}, tenants)
	assert.ErrorIs(t, coll.FindOne(ctx, bson.D{{Key: "_id", Value: tk.ID}}).Err(), mongo.ErrNoDocuments, "the hard-deleted one is removed once its events are out")
}
