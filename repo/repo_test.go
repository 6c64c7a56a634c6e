package repo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

var ctx = context.Background()

// setup returns a bus whose listener writes every event to j, and a
// repository for T on a fresh database.
func setup[T mgm.Model](t *testing.T, j *journal) (*events.Bus, *repo.Repository[T], *mongo.Database) {
	t.Helper()
	bus := events.NewBus()
	if j != nil {
		bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
			j.add(e.Type.String())
			return nil
		}))
	}
	db := srv.Database(t)
	r, err := repo.New[T](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return bus, r, db
}

func count(t *testing.T, db *mongo.Database, coll string, filter any) int64 {
	t.Helper()
	if filter == nil {
		filter = bson.D{}
	}
	n, err := db.Collection(coll).CountDocuments(ctx, filter)
	require.NoError(t, err)
	return n
}

// TestEventTable proves each row of the operation -> events table in the
// package documentation, with mgm's hooks where they fall.
func TestEventTable(t *testing.T) {
	j := &journal{}
	_, users, db := setup[*hooked](t, j)
	take := func() []string { l := j.lines; j.lines = nil; return l }

	u := &hooked{Name: "zwt", j: j}
	require.NoError(t, users.Insert(ctx, u))
	assert.Equal(t, []string{"Creating", "Saving", "BeforeConvert", "BeforeSave", "AfterSave", "Created", "Saved"}, take(), "Insert")
	assert.False(t, u.ID.IsZero())

	u.Name = "zwt2"
	require.NoError(t, users.Save(ctx, u))
	assert.Equal(t, []string{"Updating", "Saving", "BeforeQuery", "BeforeConvert", "BeforeSave", "AfterSave", "Updated", "Saved"}, take(), "Save of a stored model")

	fresh := &hooked{Name: "new", j: j}
	require.NoError(t, users.Save(ctx, fresh))
	assert.Equal(t, []string{"Creating", "Saving", "BeforeConvert", "BeforeSave", "AfterSave", "Created", "Saved"}, take(), "Save of a new model")

	u.Name = "zwt3"
	require.NoError(t, users.Update(ctx, u))
	assert.Equal(t, []string{"Updating", "Saving", "BeforeQuery", "BeforeConvert", "BeforeSave", "AfterSave", "Updated", "Saved"}, take(), "Update")

	require.NoError(t, users.InsertMany(ctx, []*hooked{{Name: "a", j: j}, {Name: "b", j: j}}))
	assert.Equal(t, []string{
		"Creating", "Saving", "Creating", "Saving",
		"BeforeConvert", "BeforeSave", "BeforeConvert", "BeforeSave",
		"AfterSave", "Created", "Saved", "AfterSave", "Created", "Saved",
	}, take(), "InsertMany")
	assert.Equal(t, int64(4), count(t, db, "hookeds", nil))

	got, err := users.FindByID(ctx, u.ID.Hex())
	require.NoError(t, err)
	assert.Equal(t, "zwt3", got.Name)
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad", "AfterConvert"}, take(), "FindByID")

	_, err = users.FindOne(ctx, bson.M{"name": "a"})
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad", "AfterConvert"}, take(), "FindOne")

	all, err := users.Find(ctx, bson.D{}, options.Find().SetSort(bson.M{"name": 1}))
	require.NoError(t, err)
	assert.Len(t, all, 4)
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad", "AfterConvert", "AfterLoad", "AfterConvert", "AfterLoad", "AfterConvert", "AfterLoad", "AfterConvert"}, take(), "Find")

	for range users.All(ctx, bson.M{"name": "a"}) {
	}
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad", "AfterConvert"}, take(), "All")

	cur, err := users.Iter(ctx, bson.M{"name": "a"})
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery"}, take(), "Iter, before the cursor reads")
	for cur.Next(ctx) {
	}
	require.NoError(t, cur.Err())
	require.NoError(t, cur.Close(ctx))
	assert.Equal(t, []string{"AfterLoad", "AfterConvert"}, take(), "Iter, as the cursor reads")

	n, err := users.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)
	assert.Equal(t, []string{"BeforeQuery"}, take(), "Count")

	names, err := users.Distinct(ctx, "name", bson.D{})
	require.NoError(t, err)
	assert.Len(t, names, 4)
	assert.Equal(t, []string{"BeforeQuery"}, take(), "Distinct")

	var agg []*hooked
	require.NoError(t, users.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.M{"name": "a"}}}}, &agg))
	assert.Len(t, agg, 1)
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad", "AfterConvert"}, take(), "Aggregate into T")
	var raw []bson.M
	require.NoError(t, users.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.M{"name": "a"}}}}, &raw))
	assert.Len(t, raw, 1)
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad"}, take(), "Aggregate into another type")

	_, err = users.UpdateOne(ctx, bson.M{"name": "a"}, bson.M{"$set": bson.M{"tag": 1}})
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery", "BeforeUpdate", "AfterUpdate"}, take(), "UpdateOne (no mgm hooks: no model)")
	_, err = users.UpdateMany(ctx, bson.D{}, bson.M{"$set": bson.M{"tag": 2}})
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery", "BeforeUpdate", "AfterUpdate"}, take(), "UpdateMany")
	_, err = users.UpdateOne(ctx, bson.M{"name": "up"}, bson.M{"$set": bson.M{"tag": 3}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery", "BeforeUpdate", "AfterUpdate"}, take(), "upsert")
	_, err = users.FindOneAndUpdate(ctx, bson.M{"name": "up"}, bson.M{"$set": bson.M{"tag": 4}})
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery", "BeforeUpdate", "AfterUpdate", "AfterLoad", "AfterConvert"}, take(), "FindOneAndUpdate")
	_, err = users.FindOneAndDelete(ctx, bson.M{"name": "up"})
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery", "BeforeDelete", "AfterDelete", "AfterLoad", "AfterConvert"}, take(), "FindOneAndDelete")

	u.j = j
	require.NoError(t, users.Delete(ctx, u))
	assert.Equal(t, []string{"Deleting", "BeforeQuery", "BeforeDelete", "AfterDelete", "Deleted"}, take(), "Delete")

	deleted, err := users.DeleteMany(ctx, bson.M{"name": bson.M{"$in": []string{"a", "b"}}})
	require.NoError(t, err)
	assert.Equal(t, int64(2), deleted.DeletedCount)
	assert.Equal(t, []string{"BeforeQuery", "BeforeDelete", "AfterDelete"}, take(), "DeleteMany")
	assert.Equal(t, int64(1), count(t, db, "hookeds", nil))
}

// TestEventContents checks what each event carries.
func TestEventContents(t *testing.T) {
	bus, users, _ := setup[*plain](t, nil)
	var seen []events.Event
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		c := *e
		c.Document = append(bson.Raw(nil), e.Document...)
		seen = append(seen, c)
		return nil
	}))
	u := &plain{Name: "zwt"}
	require.NoError(t, users.Insert(ctx, u))
	require.Len(t, seen, 3)
	bc, bs, as := seen[0], seen[1], seen[2]
	assert.Equal(t, events.OpInsert, bc.Op)
	assert.Equal(t, "plains", bc.Collection)
	assert.Equal(t, "*repo_test.plain", bc.ModelType.String())
	assert.Same(t, u, bc.Model)
	assert.Nil(t, bc.Document, "BeforeConvert comes before the encoding")
	assert.Equal(t, "zwt", bs.Document.Lookup("name").StringValue())
	assert.Equal(t, u.ID, as.Document.Lookup("_id").ObjectID(), "AfterSave's document has the ID")

	seen = nil
	_, err := users.DeleteMany(ctx, bson.M{"name": "zwt"})
	require.NoError(t, err)
	require.Len(t, seen, 3)
	assert.Equal(t, events.OpDeleteMany, seen[0].Op)
	assert.Nil(t, seen[0].Model, "DeleteMany has no model")
	assert.Equal(t, bson.M{"name": "zwt"}, seen[0].Filter, "BeforeQuery has the filter")
	assert.Equal(t, bson.M{"name": "zwt"}, seen[1].Filter, "BeforeDelete too")
	assert.Equal(t, int64(1), seen[2].DeletedCount)
}

var errRefused = errors.New("refused")

// TestAbortWritesNothing: an error or a panic from a Before* listener, or
// a failing mgm hook, leaves the database as it was.
func TestAbortWritesNothing(t *testing.T) {
	failures := map[string]events.Listener{
		"error": events.ListenerFunc(func(context.Context, *events.Event) error { return errRefused }),
		"panic": events.ListenerFunc(func(context.Context, *events.Event) error { panic(errRefused) }),
	}
	for name, fail := range failures {
		for _, at := range []events.Type{events.BeforeConvert, events.BeforeSave} {
			t.Run(name+"/"+at.String(), func(t *testing.T) {
				bus, users, db := setup[*plain](t, nil)
				stored := &plain{Name: "stored", Age: 1}
				require.NoError(t, users.Insert(ctx, stored))
				bus.Register(fail, events.On(at))

				u := &plain{Name: "new"}
				err := users.Insert(ctx, u)
				require.ErrorIs(t, err, errRefused)
				require.ErrorIs(t, err, events.ErrAborted)
				assert.True(t, u.ID.IsZero(), "the generated ID is taken back")

				err = users.InsertMany(ctx, []*plain{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}})
				require.ErrorIs(t, err, errRefused)
				assert.Contains(t, err.Error(), "models[0]")

				stored.Age = 99
				require.ErrorIs(t, users.Save(ctx, stored), errRefused)
				require.ErrorIs(t, users.Update(ctx, stored), errRefused)

				assert.Equal(t, int64(1), count(t, db, "plains", nil), "no insert happened")
				assert.Equal(t, int64(1), count(t, db, "plains", bson.M{"age": 1}), "no update happened")
			})
		}
	}
	t.Run("panic/BeforeDelete", func(t *testing.T) {
		bus, users, db := setup[*plain](t, nil)
		u := &plain{Name: "stays"}
		require.NoError(t, users.Insert(ctx, u))
		bus.Register(failures["panic"], events.On(events.BeforeDelete))
		assert.ErrorIs(t, users.Delete(ctx, u), events.ErrPanic)
		_, err := users.DeleteMany(ctx, bson.D{})
		assert.ErrorIs(t, err, events.ErrPanic)
		assert.Equal(t, int64(1), count(t, db, "plains", nil))
	})
	t.Run("InsertMany/last model", func(t *testing.T) {
		bus, users, db := setup[*plain](t, nil)
		bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
			if e.Model.(*plain).Name == "m3" {
				return errRefused
			}
			return nil
		}), events.On(events.BeforeSave))
		ms := []*plain{{Name: "m1"}, {Name: "m2"}, {Name: "m3"}}
		err := users.InsertMany(ctx, ms)
		require.ErrorIs(t, err, errRefused)
		assert.Contains(t, err.Error(), "models[2]")
		assert.Zero(t, count(t, db, "plains", nil), "one bad model aborts the whole batch")
		for _, m := range ms {
			assert.True(t, m.ID.IsZero())
		}
	})
	t.Run("mgm hook", func(t *testing.T) {
		_, users, db := setup[*hooked](t, &journal{})
		err := users.Insert(ctx, &hooked{Name: "x", failOn: "Saving"})
		require.ErrorContains(t, err, "Saving refused")
		assert.Zero(t, count(t, db, "hookeds", nil))
	})
}

func TestAfterErrorComesAfterTheWrite(t *testing.T) {
	bus, users, db := setup[*plain](t, nil)
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return errRefused }), events.On(events.AfterSave))
	err := users.Insert(ctx, &plain{Name: "written"})
	require.ErrorIs(t, err, errRefused)
	assert.NotErrorIs(t, err, events.ErrAborted)
	assert.Equal(t, int64(1), count(t, db, "plains", nil), "the write happened")
}

func TestBeforeSaveDocumentIsWritten(t *testing.T) {
	bus, users, db := setup[*plain](t, nil)
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		var d bson.D
		if err := bson.Unmarshal(e.Document, &d); err != nil {
			return err
		}
		d = append(d, bson.E{Key: "stamp", Value: "by listener"})
		raw, err := bson.Marshal(d)
		e.Document = raw
		return err
	}), events.On(events.BeforeSave))
	require.NoError(t, users.Insert(ctx, &plain{Name: "zwt"}))
	assert.Equal(t, int64(1), count(t, db, "plains", bson.M{"stamp": "by listener"}))
}

func TestAfterLoadRewritesDocument(t *testing.T) {
	bus, users, _ := setup[*plain](t, nil)
	require.NoError(t, users.Insert(ctx, &plain{Name: "old name"}))
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		var d bson.M
		if err := bson.Unmarshal(e.Document, &d); err != nil {
			return err
		}
		d["name"] = "migrated"
		raw, err := bson.Marshal(d)
		e.Document = raw
		return err
	}), events.On(events.AfterLoad))
	u, err := users.FindOne(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, "migrated", u.Name)
}

func TestDefaultModelTimestamps(t *testing.T) {
	_, users, db := setup[*plain](t, &journal{})
	u := &plain{Name: "zwt"}
	require.NoError(t, users.Insert(ctx, u))
	assert.False(t, u.CreatedAt.IsZero(), "DefaultModel's Creating hook ran")
	assert.False(t, u.UpdatedAt.IsZero(), "DefaultModel's Saving hook ran")
	created := u.CreatedAt
	time.Sleep(5 * time.Millisecond)
	u.Age = 2
	require.NoError(t, users.Update(ctx, u))
	stored, err := users.FindByID(ctx, u.ID)
	require.NoError(t, err)
	assert.True(t, stored.UpdatedAt.After(created), "updated_at moved")
	assert.WithinDuration(t, created, stored.CreatedAt, time.Millisecond, "created_at kept")
	assert.Equal(t, int64(1), count(t, db, "plains", bson.M{"age": 2}))
}

// TestMgmDefaultConfig uses mgm's global configuration, as existing mgm
// code does, and the error when it is missing.
func TestMgmDefaultConfig(t *testing.T) {
	mgm.ResetDefaultConfig()
	_, err := repo.New[*plain](events.NewBus())
	require.ErrorIs(t, err, repo.ErrNotConfigured)
	assert.ErrorContains(t, err, "*repo_test.plain")

	db := srv.Database(t)
	require.NoError(t, mgm.SetDefaultConfig(nil, db.Name(), options.Client().ApplyURI(srv.URI)))
	defer mgm.ResetDefaultConfig()
	users, err := repo.New[*plain](events.NewBus())
	require.NoError(t, err)
	u := &plain{Name: "via mgm"}
	require.NoError(t, users.Insert(ctx, u))
	var viaMgm plain
	require.NoError(t, mgm.Coll(&viaMgm).FindByIDWithCtx(ctx, u.ID, &viaMgm), "mgm reads what the repository wrote")
	assert.Equal(t, "via mgm", viaMgm.Name)
	require.NoError(t, mgm.Coll(&viaMgm).DeleteWithCtx(ctx, &viaMgm))
}

func TestCustomIDTypes(t *testing.T) {
	t.Run("int64", func(t *testing.T) {
		_, counters, db := setup[*counter](t, nil)
		require.NoError(t, counters.Insert(ctx, &counter{ID: 7, Name: "seven"}))
		got, err := counters.FindByID(ctx, "7") // through PrepareID
		require.NoError(t, err)
		assert.Equal(t, "seven", got.Name)
		got.Name = "SEVEN"
		require.NoError(t, counters.Save(ctx, got))
		assert.Equal(t, int64(1), count(t, db, "counters_by_int", bson.M{"_id": int64(7), "name": "SEVEN"}))
		require.NoError(t, counters.Delete(ctx, got))
		assert.Zero(t, count(t, db, "counters_by_int", nil))
	})
	t.Run("string", func(t *testing.T) {
		_, tags, db := setup[*tagged](t, nil)
		require.NoError(t, tags.Save(ctx, &tagged{ID: "go", Label: "Go"}), "Save with an ID inserts a missing document")
		require.NoError(t, tags.Update(ctx, &tagged{ID: "go", Label: "Golang"}))
		got, err := tags.FindByID(ctx, "go")
		require.NoError(t, err)
		assert.Equal(t, "Golang", got.Label)
		assert.Equal(t, int64(1), count(t, db, "taggeds", nil))
	})
}

type badTag struct {
	mgm.DefaultModel `bson:",inline"`
	Code             string `bson:"code" auto:"inc"`
}

func TestBadInput(t *testing.T) {
	_, users, db := setup[*plain](t, nil)
	var nilUser *plain

	for name, err := range map[string]error{
		"Insert": users.Insert(ctx, nilUser),
		"Save":   users.Save(ctx, nil),
		"Update": users.Update(ctx, nilUser),
		"Delete": users.Delete(ctx, nilUser),
	} {
		assert.ErrorIs(t, err, repo.ErrNilModel, name)
		assert.ErrorContains(t, err, name+"(nil *repo_test.plain)")
	}
	err := users.InsertMany(ctx, []*plain{{Name: "ok"}, nil})
	assert.ErrorIs(t, err, repo.ErrNilModel)
	assert.ErrorContains(t, err, "models[1]")
	assert.Zero(t, count(t, db, "plains", nil), "nothing half-written")

	_, err = repo.New[valueModel](nil, repo.WithDatabase(db))
	assert.ErrorIs(t, err, model.ErrUnsupportedType)
	assert.ErrorContains(t, err, "repo_test.valueModel must be a pointer to a struct")

	_, err = repo.New[*badTag](nil, repo.WithDatabase(db))
	assert.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, "field Code")

	_, err = users.Find(ctx, 42)
	assert.ErrorContains(t, err, "repo plains: Find:")
	_, err = users.DeleteMany(ctx, nil)
	assert.ErrorIs(t, err, repo.ErrInvalidArgument)
	_, err = users.FindByID(ctx, "not-hex")
	assert.ErrorIs(t, err, repo.ErrInvalidArgument)
	_, err = users.FindOne(ctx, bson.M{"name": "nobody"})
	assert.ErrorIs(t, err, repo.ErrNotFound)
	assert.ErrorIs(t, err, mongo.ErrNoDocuments)
	assert.ErrorIs(t, users.Update(ctx, &plain{}), repo.ErrInvalidArgument, "no ID")
	err = users.Update(ctx, &plain{DefaultModel: mgm.DefaultModel{IDField: mgm.IDField{ID: primitive.NewObjectID()}}})
	assert.ErrorIs(t, err, repo.ErrNotFound)
	assert.Zero(t, count(t, db, "plains", nil))
}

// TestIterStreams proves that events fire as documents are read, not for
// the whole result first.
func TestIterStreams(t *testing.T) {
	bus, users, _ := setup[*plain](t, nil)
	for i := range 5 {
		require.NoError(t, users.Insert(ctx, &plain{Name: "u", Age: i}))
	}
	converted := 0
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { converted++; return nil }), events.On(events.AfterConvert))
	c, err := users.Iter(ctx, bson.D{}, options.Find().SetBatchSize(2).SetSort(bson.M{"age": 1}))
	require.NoError(t, err)
	defer c.Close(ctx)
	require.True(t, c.Next(ctx))
	assert.Equal(t, 1, converted)
	assert.Equal(t, 0, c.Model().Age)
	require.True(t, c.Next(ctx))
	assert.Equal(t, 2, converted)
	ages := []int{}
	for u, err := range users.All(ctx, bson.M{"age": bson.M{"$gte": 3}}) {
		require.NoError(t, err)
		ages = append(ages, u.Age)
	}
	assert.ElementsMatch(t, []int{3, 4}, ages)
}

func TestEventsCanBeSwitchedOff(t *testing.T) {
	j := &journal{}
	bus, users, db := setup[*plain](t, j)
	quiet, err := repo.New[*plain](bus, repo.WithDatabase(db), repo.WithoutEvents())
	require.NoError(t, err)
	u := &plain{Name: "quiet"}
	require.NoError(t, quiet.Insert(ctx, u))
	assert.False(t, u.CreatedAt.IsZero(), "mgm hooks still run")
	_, err = users.Find(events.WithoutEvents(ctx), bson.D{})
	require.NoError(t, err)
	assert.Empty(t, j.lines)
	_, err = users.Find(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad", "AfterConvert"}, j.lines)
}

func TestListenerForOneModel(t *testing.T) {
	bus := events.NewBus()
	db := srv.Database(t)
	var seen []string
	bus.Register(events.TypedFunc(func(_ context.Context, e *events.Event, p *plain) error {
		seen = append(seen, e.Type.String()+" "+p.Name)
		return nil
	}), events.ForModel[*plain](), events.On(events.BeforeSave))
	plains, err := repo.New[*plain](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	tags, err := repo.New[*tagged](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, plains.Insert(ctx, &plain{Name: "p"}))
	require.NoError(t, tags.Insert(ctx, &tagged{ID: "t"}))
	assert.Equal(t, []string{"BeforeSave p"}, seen)
}

// note has a string _id the driver fills when it is empty.
type note struct {
	ID   string `bson:"_id,omitempty"`
	Text string `bson:"text"`
}

func (n *note) PrepareID(id any) (any, error) { return id, nil }
func (n *note) GetID() any                    { return n.ID }
func (n *note) SetID(id any)                  { n.ID = id.(string) } // panics on an ObjectID

// memo's _id is whatever the driver generates.
type memo struct {
	ID   any    `bson:"_id,omitempty"`
	Text string `bson:"text"`
}

func (m *memo) PrepareID(id any) (any, error) { return id, nil }
func (m *memo) GetID() any                    { return m.ID }
func (m *memo) SetID(id any)                  { m.ID = id }

func TestDriverGeneratedIDs(t *testing.T) {
	var j journal
	_, notes, db := setup[*note](t, &j)
	n := &note{Text: "a"}
	err := notes.Insert(ctx, n)
	require.ErrorContains(t, err, "the document was written, but *repo_test.note.SetID(primitive.ObjectID) panicked")
	assert.Equal(t, int64(1), count(t, db, "notes", nil), "the error says it was written, and it was")
	// The write is done, so AfterSave's listeners learn of it (the outbox
	// empties the recorder whose events it stored).
	assert.Equal(t, []string{"BeforeConvert", "BeforeSave", "AfterSave"}, j.lines)

	_, memos, db2 := setup[*memo](t, nil)
	ms := []*memo{{Text: "x"}, {Text: "y"}}
	require.NoError(t, memos.InsertMany(ctx, ms))
	require.NotNil(t, ms[0].ID, "InsertMany gives models the IDs the driver generated")
	assert.NotEqual(t, ms[0].ID, ms[1].ID)
	assert.Equal(t, int64(1), count(t, db2, "memos", bson.M{"_id": ms[1].ID, "text": "y"}))
}

// parcel is written by TestNestedWrittenError, whose BeforeSave listener
// inserts a note.
type parcel struct {
	mgm.DefaultModel `bson:",inline"`
	Text             string `bson:"text"`
}

// TestNestedWrittenError: a BeforeSave listener inserts a note through
// another repository (an audit trail, say); the note is stored but its
// SetID panics, and the listener passes that error on. The parcel is not
// written, so no AfterSave is published for it, and its generated ID is
// taken back: an error that says "written" speaks for the write that
// returned it, not for the operation that receives it.
func TestNestedWrittenError(t *testing.T) {
	bus := events.NewBus()
	db := srv.Database(t)
	notes, err := repo.New[*note](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	parcels, err := repo.New[*parcel](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	var after []string
	bus.Register(events.TypedFunc(func(ctx context.Context, e *events.Event, _ *parcel) error {
		switch e.Type {
		case events.BeforeSave:
			return notes.Insert(ctx, &note{Text: "side"}) // stored, but SetID panics
		case events.AfterSave:
			after = append(after, e.Type.String())
		}
		return nil
	}))
	p := &parcel{Text: "outer"}
	err = parcels.Insert(ctx, p)
	require.ErrorContains(t, err, "the document was written, but *repo_test.note.SetID(primitive.ObjectID) panicked")
	assert.Equal(t, int64(1), count(t, db, "notes", nil), "the note was written")
	assert.Equal(t, int64(0), count(t, db, "parcels", nil), "the parcel was not")
	assert.Empty(t, after, "AfterSave for a parcel that was never written")
	assert.True(t, p.ID.IsZero(), "the generated ID of the unwritten parcel is taken back; got %v", p.ID)
}
