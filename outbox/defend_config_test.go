package outbox_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/bsonrw"
)

// TestDefendCustomRegistryTimesStrandEvents: with a repository registry
// that encodes time.Time as an RFC 3339 string (a JSON-friendly choice),
// the outbox writes _outbox.due and the events' times with it; the relay
// looks for due ≤ now as a BSON date and never finds the document.
func TestDefendCustomRegistryTimesStrandEvents(t *testing.T) {
	reg := model.Registry()
	tt := reflect.TypeFor[time.Time]()
	reg.RegisterTypeEncoder(tt, bsoncodec.ValueEncoderFunc(func(_ bsoncodec.EncodeContext, vw bsonrw.ValueWriter, v reflect.Value) error {
		return vw.WriteString(v.Interface().(time.Time).UTC().Format(time.RFC3339Nano))
	}))
	bus := events.NewBus()
	bus.Register(outbox.New())
	db := srv.Database(t)
	orders, err := repo.New[*order](bus, repo.WithDatabase(db), repo.WithRegistry(reg))
	require.NoError(t, err)
	o := &order{Status: "placed"}
	o.Record("order.placed", nil)
	if err := orders.Insert(ctx, o); err != nil {
		return // refused: held
	}
	t.Logf("stored _outbox.due: %#v", box(t, db, o.ID)["due"])
	p := &pub{}
	n, err := relay(t, db, p, outbox.WithCollections("orders")).Drain(ctx)
	t.Logf("drain: %d, %v", n, err)
	assert.Len(t, p.all(), 1, "the stored event is delivered")
}

// TestHeldQuietRepositoryStillStores: a repository WithoutEvents (and a
// call under events.WithoutEvents) still runs the outbox: Save keeps the
// pending event and adds the new one; UpdateMany with a recorder refuses.
func TestHeldQuietRepositoryStillStores(t *testing.T) {
	bus := events.NewBus()
	bus.Register(outbox.New())
	db := srv.Database(t)
	orders, err := repo.New[*order](bus, repo.WithDatabase(db), repo.WithoutEvents())
	require.NoError(t, err)
	o := &order{Status: "placed"}
	o.Record("e1", nil)
	require.NoError(t, orders.Insert(ctx, o))
	o.Record("e2", nil)
	require.NoError(t, orders.Save(events.WithoutEvents(ctx), o))
	assert.Equal(t, 2, queueLen(t, db, o.ID))
	var rec outbox.Recorder
	rec.Record("many", nil)
	_, err = orders.UpdateMany(outbox.WithRecorder(ctx, &rec), bsonD(), bsonSet("status", "x"))
	assert.ErrorIs(t, err, outbox.ErrUnsupported)
}

// TestDefendRepositoryWithoutOutboxDropsEvents: a model that embeds
// outbox.Recorder, on a bus without the outbox (a forgotten registration,
// a second bus), would be inserted without error and its events stored
// nowhere; repo.New refuses it, as it refuses a model whose policy tags no
// policy enforces.
func TestDefendRepositoryWithoutOutboxDropsEvents(t *testing.T) {
	db := srv.Database(t)
	_, err := repo.New[*order](events.NewBus(), repo.WithDatabase(db))
	require.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `"outbox"`)

	bus := events.NewBus()
	bus.Register(outbox.New())
	_, err = repo.New[*order](bus, repo.WithDatabase(db))
	assert.NoError(t, err, "with the outbox on the bus")
}

// TestNewRelayRefusesBadOptions: NewRelay refuses, with ErrInvalidRelay
// naming the option, a lease too short to deliver anything or long
// enough to overflow a relay's sums of leases, and the other options
// out of range.
func TestNewRelayRefusesBadOptions(t *testing.T) {
	db := srv.Database(t)
	for _, tc := range []struct {
		opt  outbox.RelayOption
		want string
	}{
		{outbox.WithLease(0), "WithLease(0s)"},
		{outbox.WithLease(time.Millisecond), "WithLease(1ms)"},
		{outbox.WithLease(time.Second - 1), "WithLease(999.999999ms)"},
		{outbox.WithLease(24*time.Hour + 1), "WithLease(24h0m0.000000001s)"},
		{outbox.WithLease(100 * 365 * 24 * time.Hour), "WithLease(876000h0m0s)"},
		{outbox.WithMaxAttempts(0), "WithMaxAttempts(0)"},
		{outbox.WithBackoff(nil), "WithBackoff(nil)"},
		{outbox.WithPollInterval(0), "WithPollInterval(0s)"},
		{outbox.WithBatch(0), "WithBatch(0)"},
		{outbox.WithLogger(nil), "WithLogger(nil)"},
		{outbox.WithRelayClock(nil), "WithRelayClock(nil)"},
	} {
		_, err := outbox.NewRelay(db, &pub{}, tc.opt)
		require.ErrorIs(t, err, outbox.ErrInvalidRelay, tc.want)
		assert.ErrorContains(t, err, tc.want)
	}
	for _, d := range []time.Duration{time.Second, 24 * time.Hour} {
		_, err := outbox.NewRelay(db, &pub{}, outbox.WithLease(d))
		assert.NoError(t, err, "WithLease(%v)", d)
	}
}
