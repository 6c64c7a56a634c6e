package softdelete_test

import (
	"context"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Note is soft-deleted.
type Note struct {
	mgm.DefaultModel `bson:",inline"`
	Text             string     `bson:"text"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
	DeletedBy        string     `bson:"deletedBy,omitempty" policy:"softdelete,by"`
}

// Memo marks with a time.Time stored whole (no omitempty), whose zero
// value is a date, not a missing field.
type Memo struct {
	mgm.DefaultModel `bson:",inline"`
	Text             string    `bson:"text"`
	DeletedAt        time.Time `bson:"deletedAt" policy:"softdelete,at"`
}

var deletedAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func softDeleted[T mgm.Model](t *testing.T) (*repo.Repository[T], *mongo.Database) {
	t.Helper()
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(softdelete.New(
		softdelete.WithClock(func() time.Time { return deletedAt }),
		softdelete.WithActor(func(c context.Context) (any, error) { return c.Value(userKey{}), nil })))
	r, err := repo.New[T](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, db
}

func TestSoftDelete(t *testing.T) {
	r, db := softDeleted[*Note](t)
	notes := []*Note{{Text: "n1"}, {Text: "n2"}, {Text: "n3"}, {Text: "n4"}, {Text: "n5"}}
	require.NoError(t, r.InsertMany(ctx, notes))
	raw := db.Collection("notes")
	rawCount := func() int64 {
		n, err := raw.CountDocuments(ctx, bson.D{})
		require.NoError(t, err)
		return n
	}
	alice := context.WithValue(ctx, userKey{}, "alice")

	require.NoError(t, r.Delete(alice, notes[0]))
	res, err := r.DeleteMany(alice, bson.M{"text": bson.M{"$in": bson.A{"n1", "n2", "n3"}}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.DeletedCount, "n1 was marked already: only n2 and n3 count")
	gone, err := r.FindOneAndDelete(events.WithoutEvents(alice), bson.M{"text": "n4"})
	require.NoError(t, err, "switching events off does not switch the policy off")
	require.NotNil(t, gone.DeletedAt)
	assert.Equal(t, deletedAt, gone.DeletedAt.UTC(), "the document as marked")
	assert.Equal(t, int64(5), rawCount(), "nothing was removed")
	marked, err := raw.FindOne(ctx, bson.M{"text": "n1"}).Raw()
	require.NoError(t, err)
	assert.Equal(t, deletedAt, marked.Lookup("deletedAt").Time().UTC())
	assert.Equal(t, "alice", marked.Lookup("deletedBy").StringValue())

	t.Run("every read path skips marked documents", func(t *testing.T) {
		_, err := r.FindByID(ctx, notes[0].ID)
		assert.ErrorIs(t, err, repo.ErrNotFound)
		_, err = r.FindOne(ctx, bson.M{"text": "n2"})
		assert.ErrorIs(t, err, repo.ErrNotFound)
		all, err := r.Find(ctx, bson.D{})
		require.NoError(t, err)
		require.Len(t, all, 1)
		assert.Equal(t, "n5", all[0].Text)
		c, err := r.Iter(ctx, bson.D{})
		require.NoError(t, err)
		k := 0
		for c.Next(ctx) {
			k++
		}
		require.NoError(t, c.Close(ctx))
		assert.Equal(t, 1, k)
		for range r.All(ctx, bson.D{}) {
			k++
		}
		assert.Equal(t, 2, k)
		n, err := r.Count(ctx, bson.D{})
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		vals, err := r.Distinct(ctx, "text", bson.D{})
		require.NoError(t, err)
		assert.Equal(t, []any{"n5"}, vals)
		var agg []bson.M
		require.NoError(t, r.Aggregate(ctx, nil, &agg))
		assert.Len(t, agg, 1)
		res, err := r.UpdateMany(ctx, bson.D{}, bson.M{"$set": bson.M{"text": "touched"}})
		require.NoError(t, err)
		assert.Equal(t, int64(1), res.MatchedCount, "updates skip marked documents")
		_, err = r.FindOneAndUpdate(ctx, bson.M{"_id": notes[0].ID}, bson.M{"$set": bson.M{"text": "x"}})
		assert.ErrorIs(t, err, repo.ErrNotFound)
	})
	t.Run("WithDeleted sees them", func(t *testing.T) {
		n, err := r.Count(softdelete.WithDeleted(ctx), bson.D{})
		require.NoError(t, err)
		assert.Equal(t, int64(5), n)
		m, err := r.FindByID(softdelete.WithDeleted(ctx), notes[0].ID)
		require.NoError(t, err)
		assert.NotNil(t, m.DeletedAt)
	})
	t.Run("restore", func(t *testing.T) {
		res, err := r.UpdateOne(softdelete.WithDeleted(ctx), bson.M{"_id": notes[0].ID}, bson.M{"$unset": bson.M{"deletedAt": "", "deletedBy": ""}})
		require.NoError(t, err)
		assert.Equal(t, int64(1), res.ModifiedCount)
		back, err := r.FindByID(ctx, notes[0].ID)
		require.NoError(t, err)
		assert.Nil(t, back.DeletedAt)
	})
	t.Run("hard delete", func(t *testing.T) {
		res, err := r.DeleteMany(softdelete.HardDelete(ctx), bson.D{})
		require.NoError(t, err)
		assert.Equal(t, int64(2), res.DeletedCount, "the live n1 and n5")
		assert.Equal(t, int64(3), rawCount(), "marked ones stay")
		res, err = r.DeleteMany(softdelete.HardDelete(softdelete.WithDeleted(ctx)), bson.D{})
		require.NoError(t, err)
		assert.Equal(t, int64(3), res.DeletedCount)
		assert.Zero(t, rawCount(), "purged")
	})
}

// TestSoftDeleteZeroTime: a time.Time mark stored without omitempty is a
// zero date on live documents, and they still count as live.
func TestSoftDeleteZeroTime(t *testing.T) {
	r, _ := softDeleted[*Memo](t)
	require.NoError(t, r.InsertMany(ctx, []*Memo{{Text: "a"}, {Text: "b"}}))
	res, err := r.DeleteMany(ctx, bson.M{"text": "a"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.DeletedCount)
	live, err := r.Find(ctx, bson.D{})
	require.NoError(t, err)
	require.Len(t, live, 1)
	assert.Equal(t, "b", live[0].Text)
}

// Handle stores its mark as null while live (no omitempty), so that a
// unique index on (name, deletedAt) holds on FerretDB as on MongoDB.
type Handle struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string     `bson:"name"`
	DeletedAt        *time.Time `bson:"deletedAt" policy:"softdelete,at"`
}

// TestUniqueKeyReusedAfterSoftDelete backs docs/policies.md's advice: a unique
// index on (key, deletedAt) lets a key be used again once its holder is
// marked, and still refuses two live holders.
func TestUniqueKeyReusedAfterSoftDelete(t *testing.T) {
	r, db := softDeleted[*Handle](t)
	_, err := db.Collection("handles").Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "name", Value: 1}, {Key: "deletedAt", Value: 1}}, Options: options.Index().SetUnique(true)})
	require.NoError(t, err)
	first := &Handle{Name: "zwt"}
	require.NoError(t, r.Insert(ctx, first))
	assert.True(t, mongo.IsDuplicateKeyError(r.Insert(ctx, &Handle{Name: "zwt"})), "two live holders")
	require.NoError(t, r.Delete(ctx, first))
	require.NoError(t, r.Insert(ctx, &Handle{Name: "zwt"}), "the key is free again")
	n, err := r.Count(ctx, bson.M{"name": "zwt"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
}
