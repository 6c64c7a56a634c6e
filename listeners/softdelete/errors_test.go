package softdelete_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestWriteOfSoftDeletedModelSaysSo: Save and Update of a model whose
// document is soft-deleted fail with ErrDeleted, whose text says how to
// restore it, instead of a driver's "no documents" or duplicate key; and
// the stored document is left as it was.
func TestWriteOfSoftDeletedModelSaysSo(t *testing.T) {
	r, db := softDeleted[*Note](t)
	n := &Note{Text: "kept"}
	require.NoError(t, r.Insert(ctx, n))
	require.NoError(t, r.Delete(ctx, n))
	before, err := db.Collection("notes").FindOne(ctx, bson.M{"_id": n.ID}).Raw()
	require.NoError(t, err)

	n.Text = "changed"
	for name, err := range map[string]error{"Save": r.Save(ctx, n), "Update": r.Update(ctx, n)} {
		require.ErrorIs(t, err, softdelete.ErrDeleted, name)
		assert.ErrorContains(t, err, n.ID.Hex(), name)
		assert.ErrorContains(t, err, "softdelete.WithDeleted", name)
	}
	after, err := db.Collection("notes").FindOne(ctx, bson.M{"_id": n.ID}).Raw()
	require.NoError(t, err)
	assert.Equal(t, before, after, "the soft-deleted document is untouched")

	// Under WithDeleted the write reaches it, and the model, whose mark the
	// delete set, restores it once the mark is cleared.
	require.NotNil(t, n.DeletedAt, "the delete set the model's mark")
	n.DeletedAt = nil
	require.NoError(t, r.Save(softdelete.WithDeleted(ctx), n))
	back, err := r.FindByID(ctx, n.ID)
	require.NoError(t, err)
	assert.Equal(t, "changed", back.Text)
}
