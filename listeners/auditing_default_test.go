package listeners_test

import (
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Post is the Quick start's kind of model: mgm.DefaultModel's created_at
// and updated_at, no audit tags.
type Post struct {
	mgm.DefaultModel `bson:",inline"`
	Title            string `bson:"title"`
	Hits             int    `bson:"hits"`
}

// TestAuditingFillsDefaultModelDates: with Auditing registered, the
// created_at and updated_at of mgm.DefaultModel, which mgm's hooks set on
// writes of a model only, are set by upserts ($setOnInsert and $set) and
// moved by operator updates ($set), as read back raw; and a Save of a
// model built without created_at keeps the stored one.
func TestAuditingFillsDefaultModelDates(t *testing.T) {
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	db := srv.Database(t)
	bus := events.NewBus()
	bus.Register(listeners.NewAuditing(listeners.WithClock(func() time.Time { return now })))
	posts, err := repo.New[*Post](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	at := func(doc bson.Raw, key string) time.Time {
		v, _ := doc.Lookup(key).TimeOK()
		return v.UTC()
	}
	raw := func(title string) bson.Raw {
		t.Helper()
		r, err := db.Collection("posts").FindOne(ctx, bson.M{"title": title}).Raw()
		require.NoError(t, err)
		return r
	}

	res, err := posts.UpdateOne(ctx, bson.M{"title": "upserted"}, bson.M{"$inc": bson.M{"hits": 1}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.UpsertedCount)
	doc := raw("upserted")
	assert.Equal(t, now, at(doc, "created_at"), "an upsert sets created_at")
	assert.Equal(t, now, at(doc, "updated_at"), "an upsert sets updated_at")

	created := now
	now = now.Add(time.Hour)
	_, err = posts.UpdateOne(ctx, bson.M{"title": "upserted"}, bson.M{"$inc": bson.M{"hits": 1}})
	require.NoError(t, err)
	doc = raw("upserted")
	assert.Equal(t, created, at(doc, "created_at"), "an update keeps created_at")
	assert.Equal(t, now, at(doc, "updated_at"), "an update moves updated_at")

	now = now.Add(time.Hour)
	_, err = posts.UpdateMany(ctx, bson.D{}, bson.M{"$set": bson.M{"title": "renamed"}})
	require.NoError(t, err)
	assert.Equal(t, now, at(raw("renamed"), "updated_at"), "UpdateMany too")

	now = now.Add(time.Hour)
	m, err := posts.FindOneAndUpdate(ctx, bson.M{"title": "renamed"}, bson.M{"$inc": bson.M{"hits": 1}}, options.FindOneAndUpdate().SetReturnDocument(options.After))
	require.NoError(t, err)
	assert.Equal(t, now, m.UpdatedAt.UTC(), "FindOneAndUpdate too")

	built := &Post{Title: "rebuilt"}
	built.ID = m.ID
	require.NoError(t, posts.Save(ctx, built))
	assert.Equal(t, created, at(raw("rebuilt"), "created_at"), "a Save of a built model keeps the stored created_at")
}
