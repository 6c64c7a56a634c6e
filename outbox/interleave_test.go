package outbox_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestRemovalKeepsWhatAWriterAddsMeanwhile: a writer saves the document
// with a new event after the relay's read of it and just before the
// relay's removal of what it delivered (on FerretDB the removal is one
// findAndModify by _id, on MongoDB a conditional update; the writer's
// command lands before it, each on one connection). The removal takes
// only the delivered event, the document stays due, and the new event is
// delivered by the next Drain.
func TestRemovalKeepsWhatAWriterAddsMeanwhile(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	require.NoError(t, orders.Insert(ctx, o))

	var armed, wrote atomic.Bool
	var werr error
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		removal := e.CommandName == "findAndModify" || e.CommandName == "update"
		if removal && armed.CompareAndSwap(true, false) {
			o.Status = "paid"
			o.Record("e2", nil)
			werr = orders.Save(ctx, o) // on the writer's own client
			wrote.Store(true)
		}
	}}
	client, err := srv.Client(ctx, options.Client().SetMaxPoolSize(1).SetMonitor(mon))
	require.NoError(t, err)
	defer client.Disconnect(ctx)
	p := &recorder{fail: func(m outbox.Message) error {
		if m.Type == "e1" {
			armed.Store(true) // the relay's next write is its removal of e1
		}
		return nil
	}}
	r := newRelay(t, client.Database(db.Name()), p, outbox.WithCollections("orders"))
	_, err = r.Drain(ctx)
	require.NoError(t, err)
	require.NoError(t, werr)
	_, err = r.Drain(ctx)
	require.NoError(t, err)
	var types []string
	for _, m := range p.take() {
		types = append(types, m.Type)
	}
	require.True(t, wrote.Load(), "the writer saved between the relay's read and its removal")
	assert.Equal(t, []string{"e1", "e2"}, types, "e2, saved meanwhile, is delivered")
	assert.Empty(t, read(t, db, o.ID).Box.Queue)
}
