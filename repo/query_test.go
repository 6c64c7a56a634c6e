package repo_test

import (
	"context"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// item belongs to an owner; the tests' BeforeQuery listener confines every
// operation to owner "a".
type item struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
	Owner            string `bson:"owner"`
	N                int    `bson:"n"`
	Seen             bool   `bson:"-"` // set by an AfterConvert listener
}

// ownerA confines every filter and pipeline to owner "a", as a policy
// listener would.
func ownerA(_ context.Context, e *events.Event) error {
	if e.Pipeline != nil {
		st, err := mql.Stages(e.Pipeline)
		if err != nil {
			return err
		}
		e.Pipeline = append([]bson.D{{{Key: "$match", Value: bson.D{{Key: "owner", Value: "a"}}}}}, st...)
		return nil
	}
	e.Filter = mql.And(e.Filter, bson.E{Key: "owner", Value: "a"})
	return nil
}

// items returns a repository over a fresh collection holding a1, a2 (owner
// a) and b1, b2 (owner b); b1 shares a1's name. rewrite registers ownerA.
func items(t *testing.T, rewrite bool) (*repo.Repository[*item], *mongo.Database, map[string]*item) {
	t.Helper()
	bus, r, db := setup[*item](t, nil)
	docs := map[string]*item{
		"a1": {Name: "x", Owner: "a", N: 1}, "a2": {Name: "y", Owner: "a", N: 2},
		"b1": {Name: "x", Owner: "b", N: 3}, "b2": {Name: "z", Owner: "b", N: 4},
	}
	for _, k := range []string{"a1", "a2", "b1", "b2"} {
		require.NoError(t, r.Insert(ctx, docs[k]))
	}
	if rewrite {
		bus.Register(events.ListenerFunc(ownerA), events.On(events.BeforeQuery))
	}
	return r, db, docs
}

// rawDocs returns the collection's documents, raw, in _id order.
func rawDocs(t *testing.T, db *mongo.Database, coll string, filter any) []bson.Raw {
	return mongotest.Docs(t, db.Collection(coll), filter)
}

// TestBeforeQueryRewritesEveryMethod: a BeforeQuery listener that adds a
// condition changes the result of every method that sends a filter or a
// pipeline. Each case is run without the listener too, to show that its
// data would give another result.
func TestBeforeQueryRewritesEveryMethod(t *testing.T) {
	cases := map[string]func(t *testing.T, r *repo.Repository[*item], docs map[string]*item) any{
		"FindByID": func(t *testing.T, r *repo.Repository[*item], docs map[string]*item) any {
			_, err := r.FindByID(ctx, docs["b1"].ID)
			return err == nil
		},
		"FindOne": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			m, err := r.FindOne(ctx, bson.M{"n": bson.M{"$gt": 2}})
			return err == nil && m != nil
		},
		"Find": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			ms, err := r.Find(ctx, bson.D{})
			require.NoError(t, err)
			return len(ms)
		},
		"Iter": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			c, err := r.Iter(ctx, bson.M{"name": "x"})
			require.NoError(t, err)
			defer c.Close(ctx)
			n := 0
			for c.Next(ctx) {
				n++
			}
			return n
		},
		"All": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			n := 0
			for _, err := range r.All(ctx, bson.D{}) {
				require.NoError(t, err)
				n++
			}
			return n
		},
		"Count": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			n, err := r.Count(ctx, bson.M{"$or": bson.A{bson.M{"owner": "b"}, bson.M{"n": 1}}})
			require.NoError(t, err)
			return n
		},
		"Distinct": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			vals, err := r.Distinct(ctx, "name", bson.D{})
			require.NoError(t, err)
			return len(vals)
		},
		"Aggregate": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			var out []bson.M
			require.NoError(t, r.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "sum", Value: bson.M{"$sum": "$n"}}}}}}, &out))
			require.Len(t, out, 1)
			return out[0]["sum"]
		},
		"UpdateOne": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			res, err := r.UpdateOne(ctx, bson.M{"name": "z"}, bson.M{"$set": bson.M{"n": 99}})
			require.NoError(t, err)
			return res.MatchedCount
		},
		"UpdateMany": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			res, err := r.UpdateMany(ctx, bson.D{}, bson.M{"$inc": bson.M{"n": 10}})
			require.NoError(t, err)
			return res.ModifiedCount
		},
		"FindOneAndUpdate": func(t *testing.T, r *repo.Repository[*item], docs map[string]*item) any {
			_, err := r.FindOneAndUpdate(ctx, bson.M{"_id": docs["b2"].ID}, bson.M{"$set": bson.M{"name": "taken"}})
			return err == nil
		},
		"FindOneAndDelete": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			_, err := r.FindOneAndDelete(ctx, bson.M{"name": "z"})
			return err == nil
		},
		"Delete": func(t *testing.T, r *repo.Repository[*item], docs map[string]*item) any {
			require.NoError(t, r.Delete(ctx, docs["b1"]))
			n, err := r.Collection().CountDocuments(ctx, bson.D{})
			require.NoError(t, err)
			return n
		},
		"DeleteMany": func(t *testing.T, r *repo.Repository[*item], _ map[string]*item) any {
			res, err := r.DeleteMany(ctx, bson.D{})
			require.NoError(t, err)
			return res.DeletedCount
		},
		"Save": func(t *testing.T, r *repo.Repository[*item], docs map[string]*item) any {
			b := docs["b1"]
			b.Name = "stolen"
			return r.Save(ctx, b) == nil // the replace matches nothing; its upsert hits b1's _id
		},
		"Update": func(t *testing.T, r *repo.Repository[*item], docs map[string]*item) any {
			b := docs["b2"]
			b.Name = "stolen"
			return r.Update(ctx, b) == nil
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			r, _, docs := items(t, false)
			without := run(t, r, docs)
			r, db, docs := items(t, true)
			bRaw := rawDocs(t, db, "items", bson.M{"owner": "b"})
			with := run(t, r, docs)
			assert.NotEqual(t, without, with, "the rewritten filter changes the result")
			assert.Equal(t, bRaw, rawDocs(t, db, "items", bson.M{"owner": "b"}), "owner b's documents are untouched")
		})
	}
}

// TestAbortInBeforeQueryOrBeforeUpdate: an error from either event stops
// the operation before anything is sent.
func TestAbortInBeforeQueryOrBeforeUpdate(t *testing.T) {
	ops := map[string]func(r *repo.Repository[*item], docs map[string]*item) error{
		"UpdateOne": func(r *repo.Repository[*item], _ map[string]*item) error {
			_, err := r.UpdateOne(ctx, bson.M{"name": "x"}, bson.M{"$set": bson.M{"n": 0}})
			return err
		},
		"upsert": func(r *repo.Repository[*item], _ map[string]*item) error {
			_, err := r.UpdateOne(ctx, bson.M{"name": "new"}, bson.M{"$set": bson.M{"n": 0}}, options.Update().SetUpsert(true))
			return err
		},
		"UpdateMany": func(r *repo.Repository[*item], _ map[string]*item) error {
			_, err := r.UpdateMany(ctx, bson.D{}, bson.M{"$set": bson.M{"n": 0}})
			return err
		},
		"FindOneAndUpdate": func(r *repo.Repository[*item], _ map[string]*item) error {
			_, err := r.FindOneAndUpdate(ctx, bson.M{"name": "new"}, bson.M{"$set": bson.M{"n": 0}}, options.FindOneAndUpdate().SetUpsert(true))
			return err
		},
		"FindOneAndDelete": func(r *repo.Repository[*item], _ map[string]*item) error {
			_, err := r.FindOneAndDelete(ctx, bson.D{})
			return err
		},
		"Delete": func(r *repo.Repository[*item], docs map[string]*item) error { return r.Delete(ctx, docs["a1"]) },
		"DeleteMany": func(r *repo.Repository[*item], _ map[string]*item) error {
			_, err := r.DeleteMany(ctx, bson.D{})
			return err
		},
		"Save": func(r *repo.Repository[*item], docs map[string]*item) error {
			docs["a1"].N = 0
			return r.Save(ctx, docs["a1"])
		},
		"Update": func(r *repo.Repository[*item], docs map[string]*item) error {
			docs["a1"].N = 0
			return r.Update(ctx, docs["a1"])
		},
		"Find": func(r *repo.Repository[*item], _ map[string]*item) error {
			_, err := r.Find(ctx, bson.D{})
			return err
		},
		"Aggregate": func(r *repo.Repository[*item], _ map[string]*item) error {
			var out []bson.M
			return r.Aggregate(ctx, nil, &out)
		},
	}
	for _, at := range []events.Type{events.BeforeQuery, events.BeforeUpdate} {
		for name, op := range ops {
			t.Run(at.String()+"/"+name, func(t *testing.T) {
				bus, r, db := setup[*item](t, nil)
				docs := map[string]*item{"a1": {Name: "x", Owner: "a", N: 1}}
				require.NoError(t, r.Insert(ctx, docs["a1"]))
				before := rawDocs(t, db, "items", nil)
				calls := 0
				bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error {
					calls++
					return errRefused
				}), events.On(at))
				err := op(r, docs)
				if calls == 0 {
					require.NoError(t, err, "%s does not publish %s", name, at)
					return
				}
				require.ErrorIs(t, err, errRefused)
				require.ErrorIs(t, err, events.ErrAborted)
				assert.Equal(t, before, rawDocs(t, db, "items", nil), "nothing was written")
			})
		}
	}
}

// byName is a filter given as a struct, which And nests in $and.
type byName struct {
	Name string `bson:"name"`
}

// TestUpsertHoldsTheFinalFilter: the document an upsert inserts holds the
// equality conditions of the final filter, the listener's included, even
// when And nests them in $and (where FerretDB does not look for them).
func TestUpsertHoldsTheFinalFilter(t *testing.T) {
	r, db, _ := items(t, true)
	res, err := r.UpdateOne(ctx, byName{"fresh"}, bson.M{"$set": bson.M{"n": 7}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	require.Equal(t, int64(1), res.UpsertedCount)
	got := rawDocs(t, db, "items", bson.M{"_id": res.UpsertedID})
	require.Len(t, got, 1)
	assert.Equal(t, "a", got[0].Lookup("owner").StringValue(), "the listener's condition")
	assert.Equal(t, "fresh", got[0].Lookup("name").StringValue(), "the caller's condition")
	assert.Equal(t, int32(7), got[0].Lookup("n").Int32())

	m, err := r.FindOneAndUpdate(ctx, byName{"other"}, bson.M{"$set": bson.M{"n": 8}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After))
	require.NoError(t, err)
	assert.Equal(t, "a", m.Owner, "FindOneAndUpdate's upsert too")

	_, err = r.UpdateOne(ctx, bson.M{"owner": "b"}, bson.M{"$set": bson.M{"n": 9}}, options.Update().SetUpsert(true))
	require.ErrorIs(t, err, repo.ErrInvalidArgument, "owner a and owner b: no document can be inserted")
	assert.ErrorContains(t, err, `"owner"`)
	assert.Zero(t, count(t, db, "items", bson.M{"n": 9}))

	_, err = r.UpdateOne(ctx, bson.M{"name": "mine"}, bson.M{"$set": bson.M{"name": "renamed"}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	assert.Equal(t, int64(1), count(t, db, "items", bson.M{"name": "renamed", "owner": "a"}), "a field the update writes is the update's")
}

func TestUpdateCountsAndUpsertedID(t *testing.T) {
	bus, r, _ := setup[*item](t, nil)
	var after events.Event
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		after = *e
		return nil
	}), events.On(events.AfterUpdate))
	for _, n := range []int{1, 2, 3} {
		require.NoError(t, r.Insert(ctx, &item{Name: "x", N: n}))
	}
	_, err := r.UpdateMany(ctx, bson.M{"n": bson.M{"$gte": 2}}, bson.M{"$set": bson.M{"name": "big"}})
	require.NoError(t, err)
	assert.Equal(t, events.OpUpdateMany, after.Op)
	assert.Equal(t, int64(2), after.MatchedCount)
	assert.Equal(t, int64(2), after.ModifiedCount)
	res, err := r.UpdateOne(ctx, bson.M{"name": "new"}, bson.M{"$set": bson.M{"n": 5}}, options.Update().SetUpsert(true))
	require.NoError(t, err)
	assert.Equal(t, int64(1), after.UpsertedCount)
	assert.Equal(t, res.UpsertedID, after.UpsertedID)
	assert.True(t, after.Upsert)
}

// TestFindOneAndUpdateReturns: the document before or after, converted by
// the AfterConvert listener.
func TestFindOneAndUpdateReturns(t *testing.T) {
	bus, r, _ := setup[*item](t, nil)
	bus.Register(events.TypedFunc(func(_ context.Context, _ *events.Event, m *item) error {
		m.Seen = true
		return nil
	}), events.ForModel[*item](), events.On(events.AfterConvert))
	require.NoError(t, r.Insert(ctx, &item{Name: "x", N: 1}))

	before, err := r.FindOneAndUpdate(ctx, bson.M{"name": "x"}, bson.M{"$inc": bson.M{"n": 1}})
	require.NoError(t, err)
	assert.Equal(t, 1, before.N, "the document before, by default")
	assert.True(t, before.Seen, "AfterConvert ran on it")
	after, err := r.FindOneAndUpdate(ctx, bson.M{"name": "x"}, bson.M{"$inc": bson.M{"n": 1}},
		options.FindOneAndUpdate().SetReturnDocument(options.After))
	require.NoError(t, err)
	assert.Equal(t, 3, after.N)
	assert.True(t, after.Seen)

	_, err = r.FindOneAndUpdate(ctx, bson.M{"name": "nobody"}, bson.M{"$inc": bson.M{"n": 1}})
	assert.ErrorIs(t, err, repo.ErrNotFound)
	deleted, err := r.FindOneAndDelete(ctx, bson.M{"name": "x"})
	require.NoError(t, err)
	assert.Equal(t, 3, deleted.N)
	assert.True(t, deleted.Seen)
	_, err = r.FindOneAndDelete(ctx, bson.M{"name": "x"})
	assert.ErrorIs(t, err, repo.ErrNotFound)
}

// TestOperatorUpdateBumpsTheVersion: an update by filter moves a versioned
// document's version, so a Save of a copy read before it conflicts.
// An operator update that sets the version itself is refused.
func TestOperatorUpdateBumpsTheVersion(t *testing.T) {
	_, accounts, db := setup[*account](t, nil)
	a := &account{Balance: 10}
	require.NoError(t, accounts.Insert(ctx, a))
	stale, err := accounts.FindByID(ctx, a.ID)
	require.NoError(t, err)

	_, err = accounts.UpdateOne(ctx, bson.M{"_id": a.ID}, bson.M{"$inc": bson.M{"balance": 5}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"balance": 15, "version": 2}))

	stale.Balance = 999
	require.ErrorIs(t, accounts.Save(ctx, stale), repo.ErrVersionConflict)
	require.ErrorIs(t, accounts.Update(ctx, stale), repo.ErrVersionConflict)
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"balance": 15, "version": 2}), "the stale writes changed nothing")

	fresh, err := accounts.FindOneAndUpdate(ctx, bson.M{"_id": a.ID}, bson.M{"$set": bson.M{"balance": 1}},
		options.FindOneAndUpdate().SetReturnDocument(options.After))
	require.NoError(t, err)
	assert.Equal(t, int64(3), fresh.Version)
	_, err = accounts.UpdateMany(ctx, bson.D{}, bson.M{"$set": bson.M{"version": 40}})
	require.ErrorIs(t, err, repo.ErrInvalidArgument, "an operator update never sets the version")
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"version": 3}))
}

func TestAggregateIntoModels(t *testing.T) {
	bus, r, _ := setup[*item](t, nil)
	converted := 0
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { converted++; return nil }), events.On(events.AfterConvert))
	for _, n := range []int{1, 2, 3} {
		require.NoError(t, r.Insert(ctx, &item{Name: "x", N: n}))
	}
	pipe := mongo.Pipeline{{{Key: "$match", Value: bson.M{"n": bson.M{"$gte": 2}}}}, {{Key: "$sort", Value: bson.M{"n": 1}}}}
	var ptrs []*item
	require.NoError(t, r.Aggregate(ctx, pipe, &ptrs))
	require.Len(t, ptrs, 2)
	assert.Equal(t, 2, ptrs[0].N)
	var structs []item
	require.NoError(t, r.Aggregate(ctx, pipe, &structs))
	require.Len(t, structs, 2)
	assert.Equal(t, 3, structs[1].N)
	assert.Equal(t, 4, converted, "AfterConvert for T and for T's struct")
	type sum struct {
		Total int `bson:"total"`
	}
	var sums []sum
	require.NoError(t, r.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.M{"_id": nil, "total": bson.M{"$sum": "$n"}}}}}, &sums))
	assert.Equal(t, []sum{{6}}, sums)
	assert.Equal(t, 4, converted, "no AfterConvert for other types")
}

func TestBadInputOfFilterOperations(t *testing.T) {
	bus, r, db := setup[*item](t, nil)
	require.NoError(t, r.Insert(ctx, &item{Name: "x"}))
	sent := 0
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { sent++; return nil }), events.On(events.BeforeQuery))
	before := rawDocs(t, db, "items", nil)
	set := bson.M{"$set": bson.M{"n": 1}}

	_, err := r.UpdateMany(ctx, nil, set)
	assert.ErrorContains(t, err, "UpdateMany: nil filter")
	_, err = r.UpdateOne(ctx, nil, set)
	assert.ErrorContains(t, err, "UpdateOne: nil filter")
	_, err = r.FindOneAndUpdate(ctx, nil, set)
	assert.ErrorContains(t, err, "FindOneAndUpdate: nil filter")
	_, err = r.FindOneAndDelete(ctx, nil)
	assert.ErrorContains(t, err, "FindOneAndDelete: nil filter")
	for name, update := range map[string]any{
		"replacement": bson.M{"name": "y"},
		"mixed":       bson.D{{Key: "$set", Value: bson.M{"n": 1}}, {Key: "name", Value: "y"}},
		"empty":       bson.D{},
		"nil":         nil,
		"struct":      item{Name: "y"},
	} {
		_, err = r.UpdateOne(ctx, bson.D{}, update)
		assert.ErrorIs(t, err, repo.ErrInvalidArgument, name)
		assert.ErrorContains(t, err, "UpdateOne", name)
	}
	_, err = r.UpdateMany(ctx, bson.D{}, bson.M{"name": "y"})
	assert.ErrorContains(t, err, "use Save")
	for name, results := range map[string]any{"nil": nil, "slice value": []item{}, "pointer to struct": &item{}, "nil pointer": (*[]item)(nil)} {
		err = r.Aggregate(ctx, nil, results)
		assert.ErrorIs(t, err, repo.ErrInvalidArgument, name)
		assert.ErrorContains(t, err, "Aggregate: results is", name)
	}
	_, err = r.Distinct(ctx, "", nil)
	assert.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.Zero(t, sent, "nothing was sent")
	assert.Equal(t, before, rawDocs(t, db, "items", nil))
}

// TestDecodeErrorsNameTheDocument: a stored document that does not fit
// the model is named by its _id, on every read path.
func TestDecodeErrorsNameTheDocument(t *testing.T) {
	_, r, db := setup[*item](t, nil)
	_, err := db.Collection("items").InsertOne(ctx, bson.D{{Key: "_id", Value: "bad-doc-7"}, {Key: "name", Value: bson.A{1, 2}}})
	require.NoError(t, err)
	reads := []struct {
		name string
		read func() error
	}{
		{"FindOne", func() error { _, err := r.FindOne(ctx, bson.D{}); return err }},
		{"Find", func() error { _, err := r.Find(ctx, bson.D{}); return err }},
		{"All", func() error {
			for _, err := range r.All(ctx, bson.D{}) {
				return err
			}
			return nil
		}},
		{"FindOneAndUpdate", func() error {
			_, err := r.FindOneAndUpdate(ctx, bson.D{}, bson.M{"$set": bson.M{"n": 1}})
			return err
		}},
		{"Aggregate", func() error { var out []*item; return r.Aggregate(ctx, nil, &out) }},
		{"FindOneAndDelete", func() error { _, err := r.FindOneAndDelete(ctx, bson.D{}); return err }}, // last: it deletes
	}
	for _, c := range reads {
		err := c.read()
		require.Error(t, err, c.name)
		assert.ErrorContains(t, err, `"bad-doc-7"`, c.name)
		assert.ErrorContains(t, err, "*repo_test.item", c.name)
	}
}

// TestPoliciesRunWithEventsOff: switching events off, per repository or
// per call, silences ordinary listeners but not policies.
func TestPoliciesRunWithEventsOff(t *testing.T) {
	bus, r, db := setup[*item](t, nil)
	require.NoError(t, r.Insert(ctx, &item{Name: "x", Owner: "b"}))
	var plain, policies int
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { plain++; return nil }))
	bus.Register(events.ListenerFunc(ownerA), events.On(events.BeforeQuery), events.AsPolicy())
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		assert.True(t, e.Quiet)
		policies++
		return nil
	}), events.AsPolicy())

	quiet, err := repo.New[*item](bus, repo.WithDatabase(db), repo.WithoutEvents())
	require.NoError(t, err)
	n, err := quiet.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n, "the policy confined the count to owner a")
	n, err = r.Count(events.WithoutEvents(ctx), bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Zero(t, plain)
	assert.Equal(t, 2, policies)
}

// TestBeforeDeleteCanTurnADeleteIntoAnUpdate: the event contract soft
// delete is built on.
func TestBeforeDeleteCanTurnADeleteIntoAnUpdate(t *testing.T) {
	bus, r, db := setup[*item](t, nil)
	ms := []*item{{Name: "x", N: 1}, {Name: "x", N: 2}, {Name: "y", N: 3}, {Name: "z", N: 4}}
	require.NoError(t, r.InsertMany(ctx, ms))
	var deleted []int64
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Type == events.BeforeDelete {
			e.Update = bson.M{"$set": bson.M{"gone": true}}
		} else {
			deleted = append(deleted, e.DeletedCount)
		}
		return nil
	}), events.On(events.BeforeDelete, events.AfterDelete))

	require.NoError(t, r.Delete(ctx, ms[3]))
	res, err := r.DeleteMany(ctx, bson.M{"name": "x"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.DeletedCount)
	m, err := r.FindOneAndDelete(ctx, bson.M{"name": "y"})
	require.NoError(t, err)
	assert.Equal(t, 3, m.N)
	assert.Equal(t, []int64{1, 2, 1}, deleted)
	assert.Equal(t, int64(4), count(t, db, "items", bson.M{"gone": true}), "marked, not deleted")

	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		e.Update = bson.M{"gone": false}
		return nil
	}), events.On(events.BeforeDelete))
	_, err = r.DeleteMany(ctx, bson.D{})
	assert.ErrorIs(t, err, repo.ErrInvalidArgument, "a replacement is no update")
	assert.Equal(t, int64(4), count(t, db, "items", nil))
}

func TestQueryEventsCarryTheSort(t *testing.T) {
	bus, r, _ := setup[*item](t, nil)
	require.NoError(t, r.Insert(ctx, &item{Name: "x"}))
	var sorts, projections []any
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		sorts, projections = append(sorts, e.Sort), append(projections, e.Projection)
		return nil
	}), events.On(events.BeforeQuery))
	by := bson.D{{Key: "n", Value: 1}}
	_, err := r.Find(ctx, bson.D{}, options.Find().SetSort(by).SetProjection(bson.M{"name": 1}))
	require.NoError(t, err)
	assert.Equal(t, bson.M{"name": 1}, projections[0], "the projection too")
	_, err = r.FindOne(ctx, bson.D{}, options.FindOne().SetSort(by))
	require.NoError(t, err)
	_, err = r.FindOneAndUpdate(ctx, bson.D{}, bson.M{"$set": bson.M{"n": 1}}, options.FindOneAndUpdate().SetSort(by))
	require.NoError(t, err)
	_, err = r.FindOneAndDelete(ctx, bson.D{}, options.FindOneAndDelete().SetSort(by))
	require.NoError(t, err)
	_, err = r.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, []any{by, by, by, by, nil}, sorts)
}
