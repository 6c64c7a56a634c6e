package autokeys_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Shipment has every kind of key, a version and an audit field.
type Shipment struct {
	mgm.IDField `bson:",inline"`
	No          int64     `bson:"no" auto:"inc"`
	Code        string    `bson:"code" auto:"inc,format=SH{seq:4}"`
	Ref         uuid.UUID `bson:"ref" auto:"uuid"`
	V           int       `bson:"v" auto:"version"`
	CreatedAt   time.Time `bson:"createdAt" audit:"createdAt"`
	Item        string    `bson:"item"`
}

// TestEventsOffKeepKeys: switching events off, for the repository or for
// one call, silences listeners such as Validation, but not AutoKeys,
// Auditing or the version, which are part of the data: the documents
// stored, read back raw, hold their numbers, order numbers, UUIDs,
// versions and dates, and the unique indexes stand.
func TestEventsOffKeepKeys(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for name, quiet := range map[string]struct {
		opts []repo.Option
	}{
		"repo.WithoutEvents":   {opts: []repo.Option{repo.WithoutEvents()}},
		"events.WithoutEvents": {},
	} {
		t.Run(name, func(t *testing.T) {
			db := srv.Database(t)
			keys, err := autokeys.New(db)
			require.NoError(t, err)
			bus := events.NewBus()
			bus.Register(keys)
			bus.Register(listeners.NewAuditing(listeners.WithClock(func() time.Time { return now })))
			validated := 0
			bus.Register(events.ListenerFunc(func(_ context.Context, _ *events.Event) error { validated++; return nil }), events.On(events.BeforeSave))
			ships, err := repo.New[*Shipment](bus, append([]repo.Option{repo.WithDatabase(db)}, quiet.opts...)...)
			require.NoError(t, err)
			c := events.WithoutEvents(ctx)

			batch := []*Shipment{{Item: "a"}, {Item: "b"}, {Item: "c"}}
			require.NoError(t, ships.InsertMany(c, batch))
			one := &Shipment{Item: "d"}
			require.NoError(t, ships.Insert(c, one))
			_, err = ships.UpdateOne(c, bson.M{"item": "e"}, bson.M{"$set": bson.M{"item": "e"}}, options.Update().SetUpsert(true))
			require.NoError(t, err)
			one.Item = "d2"
			require.NoError(t, ships.Save(c, one))
			assert.Zero(t, validated, "other listeners are silenced")

			raws := mongotest.Docs(t, db.Collection("shipments"), nil)
			require.Len(t, raws, 5)
			nos, codes := map[int64]bool{}, map[string]bool{}
			for _, raw := range raws {
				no, _ := raw.Lookup("no").AsInt64OK()
				code, _ := raw.Lookup("code").StringValueOK()
				_, ref, _ := raw.Lookup("ref").BinaryOK()
				created, _ := raw.Lookup("createdAt").TimeOK()
				v, _ := raw.Lookup("v").AsInt64OK()
				assert.NotZero(t, no, "%s", raw)
				assert.NotEmpty(t, code, "%s", raw)
				assert.NotEqual(t, uuid.Nil[:], ref, "%s", raw)
				assert.NotEmpty(t, ref, "%s", raw)
				assert.Equal(t, now, created.UTC(), "%s", raw)
				assert.NotZero(t, v, "%s", raw)
				nos[no], codes[code] = true, true
			}
			assert.Len(t, nos, 5, "no number twice")
			assert.Len(t, codes, 5, "no order number twice")
			assert.True(t, uniqueOn(t, db.Collection("shipments"), "no"))
			assert.True(t, uniqueOn(t, db.Collection("shipments"), "code"))
			assert.Equal(t, 2, one.V, "Save moved the version")
		})
	}
}

// TestZeroKeyIsNeverStored: with no listener to fill a key, a write of a
// model whose key is zero, and an upsert that would insert a document
// without it, are refused with an error naming the field, and nothing is
// written.
func TestZeroKeyIsNeverStored(t *testing.T) {
	db := srv.Database(t)
	ships, err := repo.New[*Shipment](events.NewBus(), repo.WithDatabase(db))
	require.NoError(t, err)
	for name, err := range map[string]error{
		"Insert":     ships.Insert(ctx, &Shipment{Item: "a"}),
		"InsertMany": ships.InsertMany(ctx, []*Shipment{{No: 1, Code: "SH1", Ref: uuid.New(), Item: "b"}, {Item: "c"}}),
	} {
		require.ErrorIs(t, err, repo.ErrInvalidArgument, name)
		assert.ErrorContains(t, err, "No", name)
		assert.ErrorContains(t, err, "autokeys.Keys", name)
	}
	_, err = ships.UpdateOne(ctx, bson.M{"item": "u"}, bson.M{"$set": bson.M{"item": "u"}}, options.Update().SetUpsert(true))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.Empty(t, mongotest.Docs(t, db.Collection("shipments"), nil), "nothing was written")

	given := &Shipment{No: 7, Code: "SH0007", Ref: uuid.New(), Item: "given"}
	require.NoError(t, ships.Insert(ctx, given), "keys the caller gives are written")
}
