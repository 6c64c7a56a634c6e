package outbox_test

import (
	"context"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

var ctx = context.Background()

// order records domain events.
type order struct {
	mgm.DefaultModel `bson:",inline"`
	outbox.Recorder  `bson:"-"`
	Status           string `bson:"status"`
	Note             string `bson:"note,omitempty"`
	Rank             int    `bson:"rank,omitempty"`
}

// placed is an event's data.
type placed struct {
	ID primitive.ObjectID `bson:"id"`
	N  int                `bson:"n"`
}

// setup returns a repository of orders on a fresh database, on a bus with
// the outbox and the given listeners.
func setup(t testing.TB, opts []outbox.Option, more ...events.Listener) (*repo.Repository[*order], *mongo.Database) {
	t.Helper()
	bus := events.NewBus()
	bus.Register(outbox.New(opts...))
	for _, l := range more {
		bus.Register(l)
	}
	db := srv.Database(t) // the outbox asks for one connection on FerretDB
	r, err := repo.New[*order](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, db
}

// atomicRun, set by strategies, makes newRelay's relays write
// conditionally.
var atomicRun bool

// strategies runs f twice: with the relay's writes as the server calls
// for (on the embedded server: each queue read again, writes by _id), and
// with the conditional writes meant for MongoDB; setup's client has a
// single connection either way, which the embedded server serves one
// command at a time.
func strategies(t *testing.T, f func(t *testing.T)) {
	t.Run("detect", f)
	t.Run("atomic", func(t *testing.T) {
		atomicRun = true
		defer func() { atomicRun = false }()
		f(t)
	})
}

// stored is an order's document as the server holds it: its outbox and
// its other fields.
type stored struct {
	Status string `bson:"status"`
	Note   string `bson:"note"`
	Box    struct {
		Queue  []string          `bson:"q"`
		Events map[string]bson.M `bson:"e"`
		Count  int64             `bson:"n"`
		Bytes  int64             `bson:"b"`
		Due    any               `bson:"due"`
		Gone   bool              `bson:"gone"`
		Tenant string            `bson:"tf"`
	} `bson:"_outbox"`
	Has bool `bson:"-"`
}

// read reads the document with _id id raw; Has is false when there is none.
func read(t testing.TB, db *mongo.Database, id any) stored {
	t.Helper()
	var s stored
	err := db.Collection("orders").FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&s)
	if err == mongo.ErrNoDocuments {
		return s
	}
	require.NoError(t, err)
	s.Has = true
	return s
}

// ids returns the IDs of the events recorded on r.
func ids(evs []outbox.Recorded) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
