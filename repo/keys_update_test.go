package repo_test

import (
	"context"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ticket has an inc key, a uuid key and a version.
type ticket struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64  `bson:"no" auto:"inc"`
	Ref              string `bson:"ref" auto:"uuid"`
	Title            string `bson:"title"`
	Version          int64  `bson:"version" auto:"version"`
}

// TestOperatorUpdatesKeepKeys: no operator update, upsert or not, through
// UpdateOne, UpdateMany, FindOneAndUpdate or a BulkWrite model, with
// events on or off, or through a listener that edits the update, stores a
// key zero or missing, or changes a stored key or version; each is refused
// with ErrInvalidArgument naming the field and the operator, and the
// collection is unchanged. Upserts still get AutoKeys' keys, or the
// non-zero ones their $setOnInsert or filter gives.
func TestOperatorUpdatesKeepKeys(t *testing.T) {
	db := srv.Database(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	var planted bson.E // what the plugin below adds to every update
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if planted.Key != "" {
			u := e.Update.(bson.D)
			e.Update = append(u[:len(u):len(u)], bson.E{Key: planted.Key, Value: planted.Value})
		}
		return nil
	}), events.On(events.BeforeUpdate))
	tickets, err := repo.New[*ticket](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	tk := &ticket{Title: "t"}
	require.NoError(t, tickets.Insert(ctx, tk))
	require.NotZero(t, tk.No)
	coll := db.Collection("tickets")
	before := mongotest.Docs(t, coll, bson.D{})

	id := bson.D{{Key: "_id", Value: tk.ID}}
	up := options.Update().SetUpsert(true)
	op := func(o string, f string, v any) bson.D { return bson.D{{Key: o, Value: bson.D{{Key: f, Value: v}}}} }
	tries := []struct {
		name, field, says string
		run               func(ctx context.Context) error
	}{
		{"$set no 0", "no", "$set of no", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$set", "no", 0))
			return err
		}},
		{"$set no 5", "no", "$set of no", func(ctx context.Context) error {
			_, err := tickets.UpdateMany(ctx, bson.D{}, op("$set", "no", 5))
			return err
		}},
		{"$unset no", "no", "$unset of no", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$unset", "no", ""))
			return err
		}},
		{"$inc no", "no", "$inc of no", func(ctx context.Context) error {
			_, err := tickets.FindOneAndUpdate(ctx, id, op("$inc", "no", -tk.No))
			return err
		}},
		{"$rename from no", "no", "$rename of no", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$rename", "no", "old"))
			return err
		}},
		{"$rename to no", "no", "$rename of title", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$rename", "title", "no"))
			return err
		}},
		{"$set ref", "ref", "$set of ref", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$set", "ref", ""))
			return err
		}},
		{"$set version", "version", "$set of version", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$set", "version", 0))
			return err
		}},
		{"$inc version", "version", "$inc of version", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$inc", "version", -1))
			return err
		}},
		{"$max no", "no", "$max of no", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, op("$max", "no", 1<<40))
			return err
		}},
		{"pipeline $set", "no", "pipeline stage 0", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, []bson.D{op("$set", "no", 0)})
			return err
		}},
		{"pipeline $project", "no", "pipeline stage 0", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, id, []bson.D{op("$project", "title", 1)})
			return err
		}},
		{"upsert $setOnInsert no 0", "no", "$setOnInsert of no", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, bson.D{{Key: "title", Value: "zero"}}, op("$setOnInsert", "no", 0), up)
			return err
		}},
		{"upsert $set no 0", "no", "$set of no", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, bson.D{{Key: "title", Value: "zero"}}, op("$set", "no", 0), up)
			return err
		}},
		{"upsert filter no 0", "no", "equality no: 0", func(ctx context.Context) error {
			_, err := tickets.UpdateOne(ctx, bson.D{{Key: "no", Value: 0}}, op("$set", "title", "f"), up)
			return err
		}},
		{"upsert filter no null", "no", "equality no: <nil>", func(ctx context.Context) error {
			_, err := tickets.FindOneAndUpdate(ctx, bson.D{{Key: "no", Value: nil}}, op("$set", "title", "f"), options.FindOneAndUpdate().SetUpsert(true))
			return err
		}},
		{"upsert filter ref empty", "ref", `equality ref: `, func(ctx context.Context) error {
			_, err := tickets.UpdateMany(ctx, bson.D{{Key: "ref", Value: ""}}, op("$set", "title", "f"), up)
			return err
		}},
		{"bulk upsert $setOnInsert no 0", "no", "$setOnInsert of no", func(ctx context.Context) error {
			_, err := tickets.BulkWrite(ctx, []mongo.WriteModel{mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "title", Value: "zero"}}).
				SetUpdate(op("$setOnInsert", "no", 0)).SetUpsert(true)})
			return err
		}},
		{"bulk $unset ref", "ref", "$unset of ref", func(ctx context.Context) error {
			_, err := tickets.BulkWrite(ctx, []mongo.WriteModel{mongo.NewUpdateManyModel().SetFilter(bson.D{}).SetUpdate(op("$unset", "ref", ""))})
			return err
		}},
	}
	for _, c := range tries {
		for _, events := range []struct {
			name string
			ctx  context.Context
		}{{"events", ctx}, {"WithoutEvents", events.WithoutEvents(ctx)}} {
			err := c.run(events.ctx)
			require.ErrorIs(t, err, repo.ErrInvalidArgument, "%s, %s", c.name, events.name)
			assert.ErrorContains(t, err, "*repo_test.ticket field "+c.field+" `auto:", "%s, %s", c.name, events.name)
			assert.ErrorContains(t, err, c.says, "%s, %s", c.name, events.name)
			require.Equal(t, before, mongotest.Docs(t, coll, bson.D{}), "%s, %s changed the collection", c.name, events.name)
		}
	}
	// A listener that adds a write of a key to the update is refused too.
	for _, p := range []bson.E{
		{Key: "$set", Value: bson.D{{Key: "no", Value: 0}}},
		{Key: "$unset", Value: bson.D{{Key: "version", Value: ""}}},
		{Key: "$setOnInsert", Value: bson.D{{Key: "ref", Value: ""}}},
	} {
		planted = p
		_, err := tickets.UpdateOne(ctx, bson.D{{Key: "title", Value: "p"}}, op("$set", "title", "p"), up)
		require.ErrorIs(t, err, repo.ErrInvalidArgument, "planted %v", p)
		require.Equal(t, before, mongotest.Docs(t, coll, bson.D{}), "planted %v", p)
	}
	planted = bson.E{}

	// What an upsert may do: AutoKeys' keys, or the non-zero ones of its
	// $setOnInsert or filter; and an update that leaves keys alone.
	_, err = tickets.UpdateOne(ctx, bson.D{{Key: "title", Value: "auto"}}, op("$set", "x", 1), up)
	require.NoError(t, err)
	_, err = tickets.UpdateOne(ctx, bson.D{{Key: "title", Value: "given"}}, op("$setOnInsert", "no", 990), up)
	require.NoError(t, err)
	_, err = tickets.UpdateOne(ctx, bson.D{{Key: "no", Value: 991}}, op("$set", "title", "by filter"), up)
	require.NoError(t, err)
	_, err = tickets.UpdateOne(ctx, id, op("$set", "title", "t2"))
	require.NoError(t, err)
	docs := mongotest.Docs(t, coll, bson.D{})
	require.Len(t, docs, 4)
	seen := map[int64]bool{}
	for _, d := range docs {
		no, ok := d.Lookup("no").AsInt64OK()
		require.True(t, ok && no != 0, "a zero or missing key: %s", d)
		require.False(t, seen[no], "a duplicate key: %s", d)
		seen[no] = true
		ref, _ := d.Lookup("ref").StringValueOK()
		require.NotEmpty(t, ref, "a zero or missing uuid: %s", d)
		assert.NotZero(t, d.Lookup("version").AsInt64(), "%s", d)
	}
	assert.True(t, seen[990] && seen[991] && seen[tk.No])
	assert.Equal(t, int64(2), mongotest.Docs(t, coll, id)[0].Lookup("version").AsInt64(), "the update moved the version by 1")
}
