package mongotest_test

import (
	"context"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

type invoice struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Total            int `bson:"total"`
}

// TestDatabaseRunsTheOutbox: the database a test gets by default runs the
// outbox, its writes and its relay, on the embedded server too, where the
// outbox refuses a client with more than one connection.
func TestDatabaseRunsTheOutbox(t *testing.T) {
	ctx := context.Background()
	srv := mongotest.Start(t)
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(outbox.New())
	invoices, err := repo.New[*invoice](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	inv := &invoice{Total: 42}
	inv.Record("invoice.issued", bson.D{{Key: "total", Value: 42}})
	require.NoError(t, invoices.Insert(ctx, inv), "the first write")

	var got []string
	relay, err := outbox.NewRelay(db, outbox.PublisherFunc(func(_ context.Context, m outbox.Message) error {
		got = append(got, m.Type)
		return nil
	}))
	require.NoError(t, err)
	n, err := relay.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"invoice.issued"}, got)

	if srv.Info().FerretDB != "" {
		pooled, err := repo.New[*invoice](bus, repo.WithDatabase(srv.PooledDatabase(t)))
		require.NoError(t, err)
		rec := &invoice{}
		rec.Record("invoice.issued", nil)
		assert.ErrorIs(t, pooled.Insert(ctx, rec), outbox.ErrUnsupported, "PooledDatabase is what the outbox refuses on FerretDB")
	}
}
