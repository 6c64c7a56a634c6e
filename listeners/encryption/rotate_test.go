package encryption_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestEncryptionRotation: write with k1, make k2 current, read both,
// re-encrypt, and then no document holds a k1 ciphertext, unbound values
// stay unbound, and the blind indexes still find every document, also once
// k1 has left the ring.
func TestEncryptionRotation(t *testing.T) {
	db := srv.Database(t)
	k1 := encryption.Key{ID: "2026-01", Secret: secret(t)}
	k2 := encryption.Key{ID: "2026-11", Secret: secret(t)}
	old, _ := encrypted[*Patient](t, db, encryption.Keys{k1})
	for _, e := range []string{"a@x", "b@x", "c@x"} {
		require.NoError(t, old.Insert(ctx, &Patient{Email: e, Notes: "old " + e, Ward: "w"}))
	}
	_, err := old.UpdateMany(ctx, bson.M{"ward": "w"}, bson.M{"$set": bson.M{"notes": "unbound"}})
	require.NoError(t, err)

	patients, enc := encrypted[*Patient](t, db, encryption.Keys{k2, k1})
	require.NoError(t, patients.Insert(ctx, &Patient{Email: "d@x", Notes: "new"}))
	ids := map[string]int{}
	for _, raw := range rawDocs(t, db, "patients") {
		ids[keyID(t, raw, "email")]++
	}
	assert.Equal(t, map[string]int{"2026-01": 3, "2026-11": 1}, ids, "writes use the current key")
	all, err := patients.Find(ctx, bson.D{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a@x", "b@x", "c@x", "d@x"}, emails(all), "reads accept every key")
	for _, e := range []string{"a@x", "d@x"} {
		n, err := patients.Count(ctx, bson.M{"email": e})
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "the blind index of %s did not change with the key", e)
	}

	var progress []encryption.ReencryptProgress
	n, err := enc.Reencrypt(ctx, db.Collection("patients"), patients.Schema().Type,
		encryption.WithReencryptBatch(2), encryption.WithReencryptProgress(func(p encryption.ReencryptProgress) { progress = append(progress, p) }))
	require.NoError(t, err)
	assert.Equal(t, int64(3), n, "the three k1 documents")
	require.NotEmpty(t, progress)
	assert.Equal(t, encryption.ReencryptProgress{Scanned: 4, Rewritten: 3}, progress[len(progress)-1])
	assert.Greater(t, len(progress), 1, "in batches")
	for _, raw := range rawDocs(t, db, "patients") {
		for _, f := range []string{"email", "notes", "birth"} {
			assert.Equal(t, "2026-11", keyID(t, raw, f))
			want := byte(1)
			if f == "notes" && raw.Lookup("email_bidx").Type != 0 && raw.Lookup("ward").StringValue() == "w" {
				want = 0 // written by UpdateMany: a copy of it may be anywhere; not laundered
			}
			assert.Equal(t, want, payload(t, raw, f)[1], "the binding is kept")
		}
	}
	n, err = enc.Reencrypt(ctx, db.Collection("patients"), patients.Schema().Type)
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "nothing left to do")

	// k1 leaves the ring; it stays the blind-index key.
	retired, _ := encrypted[*Patient](t, db, encryption.Keys{k2}, encryption.WithIndexKey(k1))
	all, err = retired.Find(ctx, bson.M{"email": bson.M{"$in": bson.A{"a@x", "d@x"}}})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a@x", "d@x"}, emails(all))
	got, err := retired.FindOne(ctx, bson.M{"email": "b@x"})
	require.NoError(t, err)
	assert.Equal(t, "unbound", got.Notes)
}
