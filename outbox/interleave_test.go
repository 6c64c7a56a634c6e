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
// with a new event right after the relay's last read of it and before the
// relay's removal of what it delivered (on FerretDB the relay reads each
// queue again by _id and then writes by _id; the writer's command lands in
// between, each on one connection). The removal takes only the delivered
// event, and the new one is delivered by the next Drain.
func TestRemovalKeepsWhatAWriterAddsMeanwhile(t *testing.T) {
	orders, db := setup(t, nil)
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	require.NoError(t, orders.Insert(ctx, o))

	var armed, wrote atomic.Bool
	var werr error
	mon := &event.CommandMonitor{Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
		if e.CommandName == "find" && armed.CompareAndSwap(true, false) {
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
			armed.Store(true) // the next read is the relay's, after publishing e1
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
	t.Logf("the writer saved between the relay's read and its removal: %v", wrote.Load())
	assert.Equal(t, []string{"e1", "e2"}, types, "e2, saved meanwhile, is delivered")
	assert.Empty(t, read(t, db, o.ID).Box.Queue)
}
