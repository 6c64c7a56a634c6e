package encryption_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func upsert() *options.UpdateOptions { return options.Update().SetUpsert(true) }

// TestEncryptionEveryWritePathStoresNoPlaintext writes a distinct
// plaintext through every write path, reads every stored document raw and
// looks for each plaintext in its bytes; then reads each back through the
// repository.
func TestEncryptionEveryWritePathStoresNoPlaintext(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	// An ordinary listener that replaces the document on BeforeSave: the
	// replacement is what gets encrypted.
	bus.Register(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		if e.Type != events.BeforeSave || e.Document.Lookup("ward").StringValue() != "replace-me" {
			return nil
		}
		d, err := mql.ToD(e.Document)
		if err != nil {
			return err
		}
		for i := range d {
			if d[i].Key == "notes" {
				d[i].Value = "plain-beforesave-replaced"
			}
		}
		e.Document, err = bson.Marshal(d)
		return err
	}))
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	quiet, err := repo.New[*Patient](bus, repo.WithDatabase(db), repo.WithoutEvents())
	require.NoError(t, err)

	want := map[string]string{} // plaintext -> the field it must read back in
	put := func(field, plain string) string { want[plain] = field; return plain }

	ins := &Patient{Email: put("email", "plain-insert@x"), Notes: put("notes", "plain-insert-notes")}
	require.NoError(t, patients.Insert(ctx, ins))
	require.NoError(t, patients.InsertMany(ctx, []*Patient{
		{Email: put("email", "plain-many-1@x")}, {Email: put("email", "plain-many-2@x"), Notes: put("notes", "plain-many-notes")}}))
	saved := &Patient{Email: "overwritten@x"}
	require.NoError(t, patients.Save(ctx, saved)) // insert
	saved.Email = put("email", "plain-save-replace@x")
	require.NoError(t, patients.Save(ctx, saved)) // replace
	upd := &Patient{Email: "before-update@x"}
	require.NoError(t, patients.Insert(ctx, upd))
	upd.Notes = put("notes", "plain-update-by-model")
	require.NoError(t, patients.Update(ctx, upd))
	require.NoError(t, patients.Insert(ctx, &Patient{Ward: "replace-me"}))
	want["plain-beforesave-replaced"] = "notes"
	require.NoError(t, quiet.Insert(ctx, &Patient{Email: put("email", "plain-quiet@x")}))

	one := &Patient{Email: "one@x", Ward: "w-one"}
	require.NoError(t, patients.Insert(ctx, one))
	_, err = patients.UpdateOne(ctx, bson.M{"_id": one.ID}, bson.M{"$set": bson.M{"email": put("email", "plain-updateone@x")}})
	require.NoError(t, err)
	_, err = patients.UpdateMany(ctx, bson.M{"ward": "w-one"}, bson.M{"$set": bson.M{"notes": put("notes", "plain-updatemany")}})
	require.NoError(t, err)
	_, err = patients.UpdateOne(ctx, bson.M{"email": put("email", "plain-upsert-filter@x")},
		bson.M{"$set": bson.M{"notes": put("notes", "plain-upsert-set")}}, upsert())
	require.NoError(t, err)
	_, err = patients.UpdateOne(ctx, bson.M{"ward": "w-soi"},
		bson.M{"$setOnInsert": bson.M{"notes": put("notes", "plain-setoninsert"), "email": put("email", "plain-soi@x")}}, upsert())
	require.NoError(t, err)
	two := &Patient{Email: "two@x"}
	require.NoError(t, patients.Insert(ctx, two))
	before, err := patients.FindOneAndUpdate(ctx, bson.M{"_id": two.ID}, bson.M{"$set": bson.M{"email": put("email", "plain-foau@x")}})
	require.NoError(t, err)
	assert.Equal(t, "two@x", before.Email, "FindOneAndUpdate's result is decrypted")
	after, err := patients.FindOneAndUpdate(ctx, bson.M{"email": put("email", "plain-foau-upsert@x")},
		bson.M{"$set": bson.M{"ward": "w-foau"}}, options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After))
	require.NoError(t, err)
	assert.Equal(t, "plain-foau-upsert@x", after.Email, "the upsert stored the filter's email")
	deleted, err := patients.FindOneAndDelete(ctx, bson.M{"_id": after.ID})
	require.NoError(t, err)
	assert.Equal(t, "plain-foau-upsert@x", deleted.Email, "FindOneAndDelete's result is decrypted")
	require.NoError(t, patients.Insert(ctx, after)) // back, for the checks below

	raws := rawDocs(t, db, "patients")
	require.Len(t, raws, 12)
	for _, raw := range raws {
		for plain := range want {
			assert.False(t, bytes.Contains(raw, []byte(plain)), "%q stored in plaintext: %s", plain, raw)
		}
		for _, f := range []string{"email", "notes", "birth"} {
			if _, err := raw.LookupErr(f); err == nil {
				payload(t, raw, f)
			}
		}
		if _, err := raw.LookupErr("email"); err == nil {
			_, err := raw.LookupErr("email_bidx")
			assert.NoError(t, err, "every stored email has its blind index: %s", raw)
		}
	}

	// Everything reads back, and each plaintext is found by its field.
	all, err := patients.Find(ctx, bson.D{})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range all {
		seen[p.Email], seen[p.Notes] = true, true
	}
	for plain := range want {
		assert.True(t, seen[plain], "%q reads back", plain)
	}
	for plain, field := range want {
		if field != "email" {
			continue
		}
		n, err := patients.Count(ctx, bson.M{"email": plain})
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "%q is found by its blind index", plain)
	}
}

// TestEncryptionBindingOfOperatorUpdates: a value an update by _id writes
// is bound to that _id; one UpdateMany writes is unbound, which the
// flags record, and so it decrypts in any document of the collection.
func TestEncryptionBindingOfOperatorUpdates(t *testing.T) {
	db := srv.Database(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	a, b := &Patient{Ward: "w"}, &Patient{Ward: "other"}
	require.NoError(t, patients.InsertMany(ctx, []*Patient{a, b}))
	_, err := patients.UpdateOne(ctx, bson.M{"_id": a.ID}, bson.M{"$set": bson.M{"email": "a@x"}})
	require.NoError(t, err)
	_, err = patients.UpdateMany(ctx, bson.M{"ward": "w"}, bson.M{"$set": bson.M{"notes": "many"}})
	require.NoError(t, err)
	coll := db.Collection("patients")
	raw, err := coll.FindOne(ctx, bson.M{"_id": a.ID}).Raw()
	require.NoError(t, err)
	assert.Equal(t, byte(1), payload(t, raw, "email")[1], "bound")
	assert.Equal(t, byte(0), payload(t, raw, "notes")[1], "unbound")

	_, err = coll.UpdateByID(ctx, b.ID, bson.M{"$set": bson.M{"notes": raw.Lookup("notes")}})
	require.NoError(t, err)
	got, err := patients.FindByID(ctx, b.ID)
	require.NoError(t, err, "the weaker, unbound case: any document of the collection")
	assert.Equal(t, "many", got.Notes)
}

// TestEncryptionSoftDeleteUpdate: a BeforeDelete listener that turns a
// delete into an update writing an encrypted field gets it encrypted.
func TestEncryptionSoftDeleteUpdate(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	bus.Register(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		e.Update = bson.M{"$set": bson.M{"notes": "plain-soft-deleted"}}
		return nil
	}), events.On(events.BeforeDelete))
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	p := &Patient{Email: "a@x"}
	require.NoError(t, patients.Insert(ctx, p))
	require.NoError(t, patients.Delete(ctx, p))
	raw := rawDocs(t, db, "patients")
	require.Len(t, raw, 1)
	assert.False(t, bytes.Contains(raw[0], []byte("plain-soft-deleted")))
	assert.Equal(t, byte(1), payload(t, raw[0], "notes")[1], "bound: Delete's filter pins the _id")
	got, err := patients.FindByID(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, "plain-soft-deleted", got.Notes)
}
