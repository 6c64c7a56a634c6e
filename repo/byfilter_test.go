package repo_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestEventTableByFilter proves the rows of DeleteOne, ReplaceOne and
// FindOneAndReplace in the package documentation's table, with mgm's
// hooks where they fall, and what each leaves in the database.
func TestEventTableByFilter(t *testing.T) {
	j := &journal{}
	_, users, db := setup[*hooked](t, j)
	take := func() []string { l := j.lines; j.lines = nil; return l }
	require.NoError(t, users.InsertMany(ctx, []*hooked{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}))
	take()

	res, err := users.DeleteOne(ctx, bson.M{"name": bson.M{"$in": bson.A{"a", "b"}}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.DeletedCount, "one of the two")
	assert.Equal(t, []string{"BeforeQuery", "BeforeDelete", "AfterDelete"}, take(), "DeleteOne")
	assert.Equal(t, int64(3), count(t, db, "hookeds", nil))

	by := &hooked{Name: "c2", j: j}
	up, err := users.ReplaceOne(ctx, bson.M{"name": "c"}, by)
	require.NoError(t, err)
	assert.Equal(t, int64(1), up.MatchedCount)
	assert.Equal(t, []string{"Updating", "Saving", "BeforeQuery", "BeforeConvert", "BeforeSave", "AfterSave", "Updated", "Saved"}, take(), "ReplaceOne")
	assert.Equal(t, int64(1), count(t, db, "hookeds", bson.M{"name": "c2"}))
	assert.True(t, by.ID.IsZero(), "the stored document kept its own _id")

	up, err = users.ReplaceOne(ctx, bson.M{"name": "none"}, &hooked{Name: "x", j: j})
	require.NoError(t, err)
	assert.Zero(t, up.MatchedCount)
	assert.Equal(t, []string{"Updating", "Saving", "BeforeQuery", "BeforeConvert", "BeforeSave"}, take(), "ReplaceOne that matches nothing")
	assert.Zero(t, count(t, db, "hookeds", bson.M{"name": "x"}))

	newcomer := &hooked{Name: "new", j: j}
	up, err = users.ReplaceOne(ctx, bson.M{"name": "none"}, newcomer, options.Replace().SetUpsert(true))
	require.NoError(t, err)
	assert.Equal(t, int64(1), up.UpsertedCount)
	assert.Equal(t, up.UpsertedID, newcomer.ID, "the model holds the _id the server gave it")
	take()

	d := &hooked{Name: "d2", j: j}
	old, err := users.FindOneAndReplace(ctx, bson.M{"name": "d"}, d)
	require.NoError(t, err)
	assert.Equal(t, "d", old.Name, "the document before")
	assert.Equal(t, []string{"Updating", "Saving", "BeforeQuery", "BeforeConvert", "BeforeSave", "AfterSave", "Updated", "Saved", "AfterLoad", "AfterConvert"}, take(), "FindOneAndReplace")
	after, err := users.FindOneAndReplace(ctx, bson.M{"name": "d2"}, &hooked{Name: "d3"}, options.FindOneAndReplace().SetReturnDocument(options.After))
	require.NoError(t, err)
	assert.Equal(t, "d3", after.Name)
	assert.Equal(t, old.ID, after.ID)
	_, err = users.FindOneAndReplace(ctx, bson.M{"name": "none"}, &hooked{Name: "y"})
	assert.ErrorIs(t, err, repo.ErrNotFound)
	assert.Zero(t, count(t, db, "hookeds", bson.M{"name": "y"}))
	take()
	_, err = users.FindOneAndReplace(ctx, bson.M{"name": "none"}, &hooked{Name: "ups", j: j}, options.FindOneAndReplace().SetUpsert(true))
	assert.ErrorIs(t, err, repo.ErrNotFound, "an upsert returns no document before")
	assert.Equal(t, []string{"Updating", "Saving", "BeforeQuery", "BeforeConvert", "BeforeSave", "AfterSave", "Updated", "Saved"}, take(), "FindOneAndReplace that returns nothing")
	assert.Equal(t, int64(1), count(t, db, "hookeds", bson.M{"name": "ups"}))

	wrongID := &hooked{Name: "z"}
	wrongID.ID = primitive.NewObjectID()
	_, err = users.ReplaceOne(ctx, bson.M{"name": "d3"}, wrongID)
	assert.Error(t, err, "MongoDB never changes a document's _id")
	assert.Equal(t, int64(1), count(t, db, "hookeds", bson.M{"name": "d3"}))
}

// TestEventTableWatch proves Watch's row of the table, without a server,
// since the embedded one has no change streams: BeforeQuery for the
// pipeline, then AfterLoad and AfterConvert for each change that carries a
// full document, and nothing for one that carries none.
func TestEventTableWatch(t *testing.T) {
	j := &journal{}
	_, users, _ := setup[*hooked](t, j)
	take := func() []string { l := j.lines; j.lines = nil; return l }
	doc := bsonDoc(t, bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "name", Value: "a"}})
	insert := bsonDoc(t, bson.D{{Key: "operationType", Value: "insert"}, {Key: "fullDocument", Value: doc}})
	deleted := bsonDoc(t, bson.D{{Key: "operationType", Value: "delete"}, {Key: "documentKey", Value: bson.D{{Key: "_id", Value: doc.Lookup("_id")}}}})

	_, got, err := users.WatchChanges(ctx, nil, insert, deleted, insert)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, "a", got[0].Name)
	assert.Nil(t, got[1], "a delete carries no document")
	assert.Equal(t, []string{"BeforeQuery", "AfterLoad", "AfterConvert", "AfterLoad", "AfterConvert"}, take(), "Watch")
}

// TestReplaceByFilterRefusesAVersionedModel: a replace by filter cannot
// check the version a model was read at, so it is refused, and the stored
// document is left as it was.
func TestReplaceByFilterRefusesAVersionedModel(t *testing.T) {
	_, accounts, db := setup[*account](t, nil)
	a := &account{Balance: 10}
	require.NoError(t, accounts.Insert(ctx, a))
	stale := &account{Balance: 99}
	_, err := accounts.ReplaceOne(ctx, bson.M{"_id": a.ID}, stale)
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "use Save")
	_, err = accounts.FindOneAndReplace(ctx, bson.M{"_id": a.ID}, stale)
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.Equal(t, int64(1), count(t, db, "accounts", bson.M{"balance": 10, "version": 1}))
}

// TestBulkWriteAsTwins proves BulkWrite's row of the table: each write
// model publishes, hooks and writes as its single twin, in order, and the
// result adds theirs up; ordered, the first failure stops it, and
// unordered, every model is tried.
func TestBulkWriteAsTwins(t *testing.T) {
	j := &journal{}
	_, users, db := setup[*hooked](t, j)
	take := func() []string { l := j.lines; j.lines = nil; return l }
	require.NoError(t, users.InsertMany(ctx, []*hooked{{Name: "a"}, {Name: "b"}, {Name: "c"}}))
	take()

	ins := &hooked{Name: "new", j: j}
	res, err := users.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(ins),
		mongo.NewUpdateOneModel().SetFilter(bson.M{"name": "a"}).SetUpdate(bson.M{"$set": bson.M{"name": "a2"}}),
		mongo.NewUpdateManyModel().SetFilter(bson.M{"name": "up"}).SetUpdate(bson.M{"$set": bson.M{"name": "up"}}).SetUpsert(true),
		mongo.NewReplaceOneModel().SetFilter(bson.M{"name": "b"}).SetReplacement(&hooked{Name: "b2", j: j}),
		mongo.NewDeleteOneModel().SetFilter(bson.M{"name": "c"}),
		mongo.NewDeleteManyModel().SetFilter(bson.M{"name": "none"}),
	})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"Creating", "Saving", "BeforeConvert", "BeforeSave", "AfterSave", "Created", "Saved",
		"BeforeQuery", "BeforeUpdate", "AfterUpdate",
		"BeforeQuery", "BeforeUpdate", "AfterUpdate",
		"Updating", "Saving", "BeforeQuery", "BeforeConvert", "BeforeSave", "AfterSave", "Updated", "Saved",
		"BeforeQuery", "BeforeDelete", "AfterDelete",
		"BeforeQuery", "BeforeDelete", "AfterDelete",
	}, take(), "BulkWrite")
	assert.Equal(t, int64(1), res.InsertedCount)
	assert.Equal(t, int64(2), res.MatchedCount, "the update and the replace")
	assert.Equal(t, int64(1), res.UpsertedCount)
	assert.Contains(t, res.UpsertedIDs, int64(2), "keyed by the model's index")
	assert.Equal(t, int64(1), res.DeletedCount)
	for name, n := range map[string]int64{"new": 1, "a2": 1, "up": 1, "b2": 1, "c": 0, "a": 0, "b": 0} {
		assert.Equal(t, n, count(t, db, "hookeds", bson.M{"name": name}), name)
	}

	dup := &hooked{Name: "dup", j: j}
	dup.ID = ins.ID
	bad := []mongo.WriteModel{
		mongo.NewUpdateOneModel().SetFilter(bson.M{"name": "a2"}).SetUpdate(bson.M{"$set": bson.M{"name": "a3"}}),
		mongo.NewInsertOneModel().SetDocument(dup), // a duplicate _id
		mongo.NewUpdateManyModel().SetFilter(bson.M{}).SetUpdate(bson.M{"$bad": bson.M{"name": "x"}}),
		mongo.NewUpdateOneModel().SetFilter(bson.M{"name": "b2"}).SetUpdate(bson.M{"$set": bson.M{"name": "b3"}}),
	}
	res, err = users.BulkWrite(ctx, bad)
	require.Error(t, err)
	assert.ErrorContains(t, err, "models[1] (*mongo.InsertOneModel)")
	assert.ErrorContains(t, err, "models[:1] were written")
	assert.Equal(t, int64(1), res.ModifiedCount)
	assert.Equal(t, int64(1), count(t, db, "hookeds", bson.M{"name": "b2"}), "ordered: nothing after the failure")

	res, err = users.BulkWrite(ctx, bad, options.BulkWrite().SetOrdered(false))
	require.Error(t, err)
	assert.ErrorContains(t, err, "2 of 4 write models failed")
	assert.ErrorContains(t, err, "models[2] (*mongo.UpdateManyModel)")
	assert.Equal(t, int64(1), res.ModifiedCount, "unordered: the last one ran")
	assert.Equal(t, int64(1), count(t, db, "hookeds", bson.M{"name": "b3"}))

	_, err = users.BulkWrite(ctx, []mongo.WriteModel{mongo.NewDeleteOneModel().SetFilter(bson.D{}).SetCollation(&options.Collation{Locale: "fr"})})
	assert.ErrorIs(t, err, repo.ErrInvalidArgument, "a delete model's collation would be ignored")
	_, err = users.BulkWrite(ctx, nil)
	assert.ErrorIs(t, err, repo.ErrInvalidArgument)
}
