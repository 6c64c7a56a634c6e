package outbox_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/internal/fakeclock"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
)

// TestRelaySetsAsideADocumentItCannotRead: a due document whose outbox
// field does not decode (written by hand, or by other code) holds up no
// other document: the relay delivers the rest, warns of it by collection
// and _id, and sets it aside for an hour, so that the next Drains do not
// read it; an array, which no relay writes, is not read at all.
func TestRelaySetsAsideADocumentItCannotRead(t *testing.T) {
	for name, box := range map[string]any{
		"q a number":     bson.D{{Key: "q", Value: 5}},
		"n a string":     bson.D{{Key: "q", Value: bson.A{"x"}}, {Key: "n", Value: "many"}},
		"e an array":     bson.D{{Key: "q", Value: bson.A{"x"}}, {Key: "e", Value: bson.A{1}}},
		"a.n a fraction": bson.D{{Key: "q", Value: bson.A{"x"}}, {Key: "a", Value: bson.D{{Key: "x", Value: bson.D{{Key: "n", Value: 1.5}}}}}},
		"an array":       bson.A{bson.D{{Key: "q", Value: 5}}},
	} {
		t.Run(name, func(t *testing.T) {
			lease := 30 * time.Second
			c := fakeclock.New(slotStart(lease))
			orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
			due := primitive.NewDateTimeFromTime(c.Now().Add(-time.Hour))
			if d, ok := box.(bson.D); ok {
				box = append(d, bson.E{Key: "due", Value: due})
			} else {
				box = bson.A{bson.D{{Key: "q", Value: 5}, {Key: "due", Value: due}}}
			}
			_, err := db.Collection("orders").InsertOne(ctx, bson.D{{Key: "_id", Value: "poison"}, {Key: outbox.Field, Value: box}})
			require.NoError(t, err)
			placeOrders(t, orders, 5)
			var logs bytes.Buffer
			r := newRelay(t, db, &recorder{}, outbox.WithLease(lease), outbox.WithRelayClock(c),
				outbox.WithCollections("orders"), outbox.WithCountEvery(time.Hour), outbox.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			n, err := r.Drain(ctx)
			require.NoError(t, err)
			assert.Equal(t, 5, n, "the other documents are delivered")
			if _, isArray := box.(bson.A); isArray {
				assert.Empty(t, logs.String(), "an array is no relay's, and not read")
				return
			}
			assert.Contains(t, logs.String(), "collection=orders documents=1 aside=1 first=poison")
			assert.Contains(t, logs.String(), "cannot be read")
			logs.Reset()
			c.Advance(lease)
			n, err = r.Drain(ctx)
			require.NoError(t, err)
			assert.Zero(t, n)
			assert.Empty(t, logs.String(), "the next Drain leaves it")
			c.Advance(time.Hour)
			_, err = r.Drain(ctx)
			require.NoError(t, err)
			assert.Contains(t, logs.String(), "first=poison", "an hour later, the relay warns of it again")
		})
	}
}

// TestRelaySetsAsideManyDocumentsInOneDrain: more documents it cannot
// read than a Drain leaves out of its reads (1,000) hold up no other
// either: one Drain sets them all aside, warns once per read, and
// delivers the rest.
func TestRelaySetsAsideManyDocumentsInOneDrain(t *testing.T) {
	lease := 30 * time.Second
	c := fakeclock.New(slotStart(lease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	due := primitive.NewDateTimeFromTime(c.Now().Add(-time.Hour))
	poison := make([]any, 1050)
	for i := range poison {
		poison[i] = bson.D{{Key: outbox.Field, Value: bson.D{{Key: "q", Value: 5}, {Key: "due", Value: due}}}}
	}
	_, err := db.Collection("orders").InsertMany(ctx, poison)
	require.NoError(t, err)
	placeOrders(t, orders, 5)
	var logs bytes.Buffer
	r := newRelay(t, db, &recorder{}, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"),
		outbox.WithCountEvery(time.Hour), outbox.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	n, err := r.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, n, "the other documents are delivered")
	assert.Equal(t, 11, bytes.Count(logs.Bytes(), []byte("cannot be read")), "a warning per read of a hundred")
}

// TestRelayReadsOnPastWhatItSetAside: a read that reached its limit
// does not hold every due document, though some of it could not be read:
// the Drain reads again and delivers the rest, instead of leaving it to
// its next poll. With a batch of 2, the first read holds the document it
// cannot read and one order.
func TestRelayReadsOnPastWhatItSetAside(t *testing.T) {
	c, db := poisoned(t, 3)
	r := newRelay(t, db, &recorder{}, outbox.WithLease(asideLease), outbox.WithRelayClock(c), outbox.WithCollections("orders"),
		outbox.WithBatch(2), outbox.WithCountEvery(time.Hour), outbox.WithLogger(slog.New(slog.DiscardHandler)))
	n, err := r.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "one Drain delivers every order")
}

// TestRelayPublishesAnEventQueuedTwiceOnce: a queue that names an event
// twice, which no writer stores, publishes it once, on both write paths,
// in a short queue and in a long one, and the document is emptied: the
// next Drain publishes nothing.
func TestRelayPublishesAnEventQueuedTwiceOnce(t *testing.T) {
	for _, events := range []int{1, 20} {
		for _, atomic := range []bool{true, false} {
			t.Run(fmt.Sprintf("events=%d/atomic=%v", events, atomic), func(t *testing.T) {
				lease := 30 * time.Second
				c := fakeclock.New(slotStart(lease))
				_, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
				at := primitive.NewDateTimeFromTime(c.Now().Add(-time.Hour))
				var q bson.A
				var e bson.D
				for i := range events {
					id := fmt.Sprint("e", i)
					q = append(q, id)
					e = append(e, bson.E{Key: id, Value: bson.D{{Key: "t", Value: "placed"}, {Key: "at", Value: at}}})
				}
				q = append(q, "e0")
				_, err := db.Collection("orders").InsertOne(ctx, bson.D{{Key: "_id", Value: "twice"}, {Key: outbox.Field, Value: bson.D{
					{Key: "q", Value: q}, {Key: "e", Value: e}, {Key: "n", Value: int64(len(q))}, {Key: "due", Value: at}}}})
				require.NoError(t, err)
				p := &recorder{}
				r := newRelay(t, db, p, outbox.WithLease(lease), outbox.WithRelayClock(c), outbox.WithCollections("orders"),
					outbox.WithAtomicWrites(atomic), outbox.WithCountEvery(time.Hour))
				n, err := r.Drain(ctx)
				require.NoError(t, err)
				assert.Equal(t, events, n)
				assert.Len(t, p.take(), events, "e0 is published once")
				assert.Zero(t, queueLen(t, db, "twice"))
				c.Advance(time.Second)
				n, err = r.Drain(ctx)
				require.NoError(t, err)
				assert.Zero(t, n)
				assert.Empty(t, p.take())
			})
		}
	}
}

// TestRelayDeliversADocumentHeldFurtherAheadThanADay: a hold no relay
// writes (more than a day ahead, or many) keeps no document back.
func TestRelayDeliversADocumentHeldFurtherAheadThanADay(t *testing.T) {
	for name, hold := range map[string]any{
		"year 9999": time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		"many":      bson.A{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(name, func(t *testing.T) {
			c := fakeclock.New(time.Now())
			orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
			o := &order{Status: "placed"}
			o.Record("e1", nil)
			require.NoError(t, orders.Insert(ctx, o))
			_, err := db.Collection("orders").UpdateByID(ctx, o.ID, bson.D{{Key: "$set", Value: bson.D{{Key: outbox.Field + ".hold", Value: hold}}}})
			require.NoError(t, err)
			n, err := newRelay(t, db, &recorder{}, outbox.WithRelayClock(c), outbox.WithCollections("orders")).Drain(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
		})
	}
}

// TestRelayLeavesADocumentItCannotSetAside: a document whose outbox
// field the relay cannot read and that the write setting it aside does
// not match (here, a change between the read and the write) stays out of
// the Drain's next reads: the Drain ends, and delivers the rest.
func TestRelayLeavesADocumentItCannotSetAside(t *testing.T) {
	c, db := poisoned(t, 5)
	changes := 0
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "update" && bytes.Contains(e.Command, []byte("hold")) {
			changes++ // before each write that sets it aside, the document changes, still unreadable
			_, err := db.Collection("orders").UpdateByID(context.Background(), "poison", bson.D{{Key: "$inc", Value: bson.D{{Key: outbox.Field + ".q", Value: 1}}}})
			require.NoError(t, err)
		}
	}}
	r := newRelay(t, monitored(t, db, mon), &recorder{}, outbox.WithLease(asideLease), outbox.WithRelayClock(c), outbox.WithCollections("orders"),
		outbox.WithCountEvery(time.Hour), outbox.WithLogger(slog.New(slog.DiscardHandler)))
	n, err := r.Drain(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, n, "the other documents are delivered")
	assert.Equal(t, 1, changes, "the Drain tried to set it aside once")
}

// asideLease is the lease of the relays of poisoned's tests.
const asideLease = 30 * time.Second

// poisoned stores, in a new database whose outbox runs on the returned
// clock, a due document whose outbox field no relay can read, due an hour
// before n orders.
func poisoned(t *testing.T, n int) (*fakeclock.Clock, *mongo.Database) {
	t.Helper()
	c := fakeclock.New(slotStart(asideLease))
	orders, db := setup(t, []outbox.Option{outbox.WithClock(c.Now)})
	due := primitive.NewDateTimeFromTime(c.Now().Add(-time.Hour))
	_, err := db.Collection("orders").InsertOne(ctx, bson.D{{Key: "_id", Value: "poison"}, {Key: outbox.Field, Value: bson.D{{Key: "q", Value: 5}, {Key: "due", Value: due}}}})
	require.NoError(t, err)
	placeOrders(t, orders, n)
	return c, db
}
