package listeners_test

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Ticket has keys and audit fields, for operator updates and upserts.
type Ticket struct {
	mgm.IDField `bson:",inline"`
	No          int64     `bson:"no" auto:"inc"`
	Ref         uuid.UUID `bson:"ref" auto:"uuid"`
	Title       string    `bson:"title"`
	Hits        int       `bson:"hits"`
	CreatedAt   time.Time `bson:"createdAt" audit:"createdAt"`
	UpdatedAt   time.Time `bson:"updatedAt" audit:"updatedAt"`
	CreatedBy   string    `bson:"createdBy" audit:"createdBy"`
	UpdatedBy   string    `bson:"updatedBy" audit:"updatedBy"`
}

// tickets returns a repository with AutoKeys and Auditing, whose clock is
// *now and whose auditor reads userKey from the context.
func tickets(t *testing.T, now *time.Time) (*repo.Repository[*Ticket], *autokeys.Keys, *mongo.Database) {
	t.Helper()
	db := srv.Database(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	audit := listeners.NewAuditing(listeners.WithAuditor(func(ctx context.Context) (any, error) { return ctx.Value(userKey{}), nil }),
		listeners.WithClock(func() time.Time { return *now }))
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(audit)
	r, err := repo.New[*Ticket](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, keys, db
}

func rawTicket(t *testing.T, db *mongo.Database, filter any) bson.Raw {
	t.Helper()
	raw, err := db.Collection("tickets").FindOne(ctx, filter).Raw()
	require.NoError(t, err)
	return raw
}

// TestUpsertGetsKeysAndAudit: a document an upsert inserts has its inc and
// uuid keys and its created and updated fields, read back raw; an upsert
// that matches keeps them, moves the updated ones, and costs no number.
func TestUpsertGetsKeysAndAudit(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	r, keys, db := tickets(t, &now)
	alice := context.WithValue(ctx, userKey{}, "alice")
	require.NoError(t, r.Insert(alice, &Ticket{Title: "first"})) // number 1

	res, err := r.UpdateOne(alice, bson.M{"title": "upserted"}, bson.M{"$inc": bson.M{"hits": 1}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.UpsertedCount)
	raw := rawTicket(t, db, bson.M{"_id": res.UpsertedID})
	assert.Equal(t, int64(2), raw.Lookup("no").Int64(), "the next number")
	sub, ref := raw.Lookup("ref").Binary()
	assert.Equal(t, byte(4), sub, "a UUID, subtype 4")
	assert.NotEqual(t, uuid.Nil[:], ref)
	assert.Equal(t, now, raw.Lookup("createdAt").Time().UTC())
	assert.Equal(t, now, raw.Lookup("updatedAt").Time().UTC())
	assert.Equal(t, "alice", raw.Lookup("createdBy").StringValue())
	assert.Equal(t, "alice", raw.Lookup("updatedBy").StringValue())
	assert.Equal(t, "upserted", raw.Lookup("title").StringValue())

	later := now.Add(time.Hour)
	now = later
	bob := context.WithValue(ctx, userKey{}, "bob")
	res, err = r.UpdateOne(bob, bson.M{"title": "upserted"}, bson.M{"$inc": bson.M{"hits": 1}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.MatchedCount)
	again := rawTicket(t, db, bson.M{"title": "upserted"})
	assert.Equal(t, int64(2), again.Lookup("no").Int64(), "a matched upsert keeps its key")
	assert.Equal(t, raw.Lookup("ref"), again.Lookup("ref"))
	assert.Equal(t, "alice", again.Lookup("createdBy").StringValue(), "created fields are set on insert only")
	assert.Equal(t, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), again.Lookup("createdAt").Time().UTC())
	assert.Equal(t, later, again.Lookup("updatedAt").Time().UTC())
	assert.Equal(t, "bob", again.Lookup("updatedBy").StringValue())
	assert.Equal(t, int32(2), again.Lookup("hits").Int32())

	seq, err := keys.Allocator().Sequence("tickets.no")
	require.NoError(t, err)
	n, err := seq.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n, "the matched upsert put its number 3 back: no gap")

	m, err := r.FindOneAndUpdate(alice, bson.M{"title": "via findAndModify"}, bson.M{"$set": bson.M{"hits": 5}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After))
	require.NoError(t, err)
	assert.Equal(t, int64(4), m.No)
	assert.NotEqual(t, uuid.Nil, m.Ref)
	assert.Equal(t, later, m.CreatedAt)
}

// TestUpsertKeepsWhatTheCallerGives: keys and audit fields set by the
// update or required by the filter are the caller's, and no field ends up
// both in $set and $setOnInsert (the server would refuse).
func TestUpsertKeepsWhatTheCallerGives(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	r, _, db := tickets(t, &now)
	mine := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := r.UpdateOne(ctx, bson.M{"no": int64(77)},
		bson.M{"$set": bson.M{"title": "given", "createdAt": mine, "updatedAt": mine}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	raw := rawTicket(t, db, bson.M{"title": "given"})
	assert.Equal(t, int64(77), raw.Lookup("no").Int64(), "the filter's number, not the counter's")
	assert.Equal(t, mine, raw.Lookup("createdAt").Time().UTC(), "createdAt as the caller set it")
	assert.Equal(t, mine, raw.Lookup("updatedAt").Time().UTC(), "updatedAt as the caller set it")
}

// TestUpdateManyAudits: every document an UpdateMany changes gets
// updatedAt and updatedBy, and none gets created fields.
func TestUpdateManyAudits(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	r, _, db := tickets(t, &now)
	batch := make([]*Ticket, 100)
	for i := range batch {
		batch[i] = &Ticket{Title: "t"}
	}
	require.NoError(t, r.InsertMany(ctx, batch))
	now = now.Add(time.Hour)
	carol := context.WithValue(ctx, userKey{}, "carol")
	res, err := r.UpdateMany(carol, bson.D{}, bson.M{"$set": bson.M{"title": "t2"}})
	require.NoError(t, err)
	assert.Equal(t, int64(100), res.ModifiedCount)
	n, err := db.Collection("tickets").CountDocuments(ctx, bson.M{"updatedAt": now, "updatedBy": "carol", "title": "t2"})
	require.NoError(t, err)
	assert.Equal(t, int64(100), n)
	n, err = db.Collection("tickets").CountDocuments(ctx, bson.M{"createdBy": "carol"})
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestAuditingExtendsPipelines checks the listener on an update pipeline,
// which the embedded server cannot run: without a database.
func TestAuditingExtendsPipelines(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	audit := listeners.NewAuditing(listeners.WithClock(func() time.Time { return now }),
		listeners.WithAuditor(func(context.Context) (any, error) { return "dave", nil }))
	pipe := mongo.Pipeline{{{Key: "$set", Value: bson.M{"title": "p"}}}}
	e := &events.Event{Type: events.BeforeUpdate, Op: events.OpUpdateMany, ModelType: reflectType[*Ticket](), Update: pipe, Upsert: true}
	require.NoError(t, audit.HandleEvent(ctx, e))
	st := e.Update.([]bson.D)
	require.Len(t, st, 5, "the caller's stage and one per audit field")
	assert.Equal(t, bson.D{{Key: "$set", Value: bson.D{{Key: "createdAt", Value: bson.D{{Key: "$ifNull", Value: bson.A{"$createdAt", bson.D{{Key: "$literal", Value: now}}}}}}}}}, st[1])
	assert.Equal(t, bson.D{{Key: "$set", Value: bson.D{{Key: "updatedAt", Value: bson.D{{Key: "$literal", Value: now}}}}}}, st[2])
	assert.Len(t, pipe, 1, "the caller's pipeline is not changed")
}

func TestLoggingRecordsUpdates(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(listeners.NewLogging(logger))
	people, err := repo.New[*Person](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = people.UpdateOne(ctx, bson.M{"email": "secret@example.com"}, bson.M{"$set": bson.M{"name": "Secret Name"}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	out := buf.String()
	for _, want := range []string{`"event":"BeforeQuery"`, `"event":"BeforeUpdate"`, `"upsert":true`, `"event":"AfterUpdate"`, `"upserted":1`, `"upsertedId"`} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "secret@example.com", "no filter without WithDocuments")
	assert.NotContains(t, out, "Secret Name", "no update without WithDocuments")

	buf.Reset()
	bus2 := events.NewBus()
	bus2.Register(listeners.NewLogging(logger, listeners.WithDocuments()))
	people2, err := repo.New[*Person](bus2, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = people2.UpdateMany(ctx, bson.M{"email": "secret@example.com"}, bson.M{"$set": bson.M{"name": "Secret Name"}})
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "secret@example.com")
	assert.Contains(t, buf.String(), "Secret Name")
}

func reflectType[T any]() reflect.Type { return reflect.TypeFor[T]() }
