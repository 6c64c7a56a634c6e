package redteam_test

// What a listener adds to a write (Event.AddExtra, Event.AddTombstone) may not
// reach a field the model declares, by a $rename's target no more than by
// its source: the repository refuses it, and each policy's Check refuses
// an addition that writes a field it governs.

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// A plugin adds Extra {$set: {x: "globex"}} to one update and
// Extra {$rename: {x: "tenant"}} to the next: the second is refused, and
// acme's document stays in acme.
func TestDefendExtraRenameMovesTenant(t *testing.T) {
	w := wire(t)
	w.seed(t)
	mine := &Account{Name: "mine"}
	require.NoError(t, w.accounts.Insert(asAcme, mine))
	w.plantThenRename(globex, "tenant")
	_, err := w.accounts.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": bson.M{"name": "one"}})
	require.NoError(t, err)
	_, err = w.accounts.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": bson.M{"name": "two"}})
	assert.ErrorContains(t, err, `"tenant"`, "the $rename into the tenant field must be refused")
	assert.Equal(t, 2, w.count(t, "accounts", bson.M{"tenant": globex}), "an acme update moved a document into globex")
	assert.Equal(t, 3, w.count(t, "accounts", bson.M{"tenant": acme}))
	assert.Equal(t, 1, w.count(t, "accounts", bson.M{"_id": mine.ID, "name": "one"}), "the refused update wrote")
}

// The same through Event.AddTombstone: a Delete of an acme account (a model
// without soft delete) that would keep it, renamed into globex, is
// refused, and nothing is deleted or moved.
func TestDefendTombstoneRenameMovesTenant(t *testing.T) {
	w := wire(t)
	w.seed(t)
	mine := &Account{Name: "mine"}
	require.NoError(t, w.accounts.Insert(asAcme, mine))
	w.plugin(func(_ context.Context, e *events.Event) error {
		e.AddExtra("$set", "x", globex)
		return nil
	}, events.On(events.BeforeUpdate))
	w.plugin(func(_ context.Context, e *events.Event) error {
		e.AddTombstone("$rename", "x", "tenant")
		return nil
	}, events.On(events.BeforeDelete))
	_, err := w.accounts.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": bson.M{"name": "one"}})
	require.NoError(t, err)
	err = w.accounts.Delete(asAcme, mine)
	assert.ErrorContains(t, err, `"tenant"`, "the tombstone's $rename into the tenant field must be refused")
	assert.Equal(t, 2, w.count(t, "accounts", bson.M{"tenant": globex}), "an acme delete moved a document into globex")
	assert.Equal(t, 1, w.count(t, "accounts", bson.M{"_id": mine.ID, "tenant": acme}), "the refused delete deleted or moved the document")
}

// Ciphertexts written by an update that does not pin one _id (UpdateMany)
// are bound to collection and field only. An attacker of tenant acme who
// holds such a ciphertext of globex (from a backup or dump) plants it in
// their own document with Extra $set of an undeclared field, then
// Extra $rename into the encrypted field: the rename is refused, so the
// application never decrypts globex's value for acme.
func TestDefendExtraRenameDecryptionOracle(t *testing.T) {
	w := wire(t)
	victim := &Patient{Email: "vic@globex.com", Notes: "x"}
	require.NoError(t, w.patients.Insert(asGlobex, victim))
	_, err := w.patients.UpdateMany(asGlobex, bson.M{"ward": ""}, bson.M{"$set": bson.M{"notes": "GLOBEX-SECRET-DIAGNOSIS"}})
	require.NoError(t, err)
	dump := w.raw(t, "patients", bson.M{"_id": victim.ID})[0]
	sub, data, ok := dump.Lookup("notes").BinaryOK()
	require.True(t, ok)
	stolen := primitive.Binary{Subtype: sub, Data: data}

	mine := &Patient{Email: "eve@acme.com", Notes: "mine"}
	require.NoError(t, w.patients.Insert(asAcme, mine))
	w.plantThenRename(stolen, "notes")
	_, err = w.patients.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": bson.M{"ward": "a"}})
	require.NoError(t, err)
	_, err = w.patients.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": bson.M{"ward": "b"}})
	assert.ErrorContains(t, err, `"notes"`, "the $rename into the encrypted field must be refused")
	got, err := w.patients.FindByID(asAcme, mine.ID)
	require.NoError(t, err)
	assert.Equal(t, "mine", got.Notes, "acme's notes changed")
	assert.NotEqual(t, "GLOBEX-SECRET-DIAGNOSIS", got.Notes, "acme got globex's plaintext decrypted")
}

// The same rename would plant a plaintext value in an encrypted field: it
// is refused, and the field keeps its ciphertext.
func TestDefendExtraRenameStoresPlaintextInEncryptedField(t *testing.T) {
	w := wire(t)
	mine := &Patient{Email: "eve@acme.com", Notes: "mine"}
	require.NoError(t, w.patients.Insert(asAcme, mine))
	w.plantThenRename("PLAINTEXT-MARKER", "notes")
	var errs []error
	for _, ward := range []string{"a", "b"} {
		_, err := w.patients.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": bson.M{"ward": ward}})
		errs = append(errs, err)
	}
	require.NoError(t, errs[0])
	assert.Error(t, errs[1], "the $rename into the encrypted field must be refused")
	raw := w.raw(t, "patients", bson.M{"_id": mine.ID})[0]
	_, _, isBinary := raw.Lookup("notes").BinaryOK()
	assert.True(t, isBinary, "notes (encrypt) is stored as %v", raw.Lookup("notes"))
}

// plantThenRename registers a plugin that adds Extra {$set: {x: value}}
// to the first update, and Extra {$rename: {x: to}} to every later one.
func (w *wired) plantThenRename(value any, to string) {
	planted := false
	w.plugin(func(_ context.Context, e *events.Event) error {
		if !planted {
			e.AddExtra("$set", "x", value)
		} else {
			e.AddExtra("$rename", "x", to)
		}
		planted = true
		return nil
	}, events.On(events.BeforeUpdate))
}

// fieldName is a field name of its own type, which the driver encodes as
// a string.
type fieldName string

// An update's own $rename whose target is a named string type, rather
// than a string, is read as the driver sends it: into the tenant field or
// an encrypted field it is refused.
func TestDefendUpdateRenameNamedTypeTarget(t *testing.T) {
	w := wire(t)
	w.seed(t)
	mine := &Account{Name: "mine"}
	require.NoError(t, w.accounts.Insert(asAcme, mine))
	_, err := w.accounts.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$set": bson.M{"x": globex}})
	require.NoError(t, err)
	_, err = w.accounts.UpdateOne(asAcme, bson.M{"_id": mine.ID}, bson.M{"$rename": bson.M{"x": fieldName("tenant")}})
	assert.Error(t, err, "the $rename into the tenant field must be refused")
	assert.Equal(t, 2, w.count(t, "accounts", bson.M{"tenant": globex}), "an acme update moved a document into globex")

	p := &Patient{Email: "eve@acme.com", Notes: "mine"}
	require.NoError(t, w.patients.Insert(asAcme, p))
	_, err = w.patients.UpdateOne(asAcme, bson.M{"_id": p.ID}, bson.M{"$set": bson.M{"x": "PLAINTEXT-MARKER"}})
	require.NoError(t, err)
	_, err = w.patients.UpdateOne(asAcme, bson.M{"_id": p.ID}, bson.M{"$rename": bson.M{"x": fieldName("notes")}})
	assert.Error(t, err, "the $rename into an encrypted field must be refused")
	raw := w.raw(t, "patients", bson.M{"_id": p.ID})[0]
	_, _, isBinary := raw.Lookup("notes").BinaryOK()
	assert.True(t, isBinary, "notes (encrypt) is stored as %v", raw.Lookup("notes"))
}
