package repo_test

import (
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// noteRow is a DTO of pagedNote with its _id, for pages.
type noteRow struct {
	ID    primitive.ObjectID `bson:"_id"`
	Email string             `bson:"email"`
}

// TestFindOneAsUnderPolicies: FindOneAs reads one of acme's live notes,
// decrypted, through a filter on the encrypted field; globex's notes and
// the deleted ones are not found; without a tenant it fails closed; it
// publishes the model's BeforeQuery and AfterLoad, and no AfterConvert,
// and sends the projection of the DTO's fields plus what the policies need.
func TestFindOneAsUnderPolicies(t *testing.T) {
	notes, db, log, seen := watchedNotes(t)
	acme, globex := tenancy.WithTenant(ctx, "acme"), tenancy.WithTenant(ctx, "globex")

	card, err := repo.FindOneAs[noteCard](acme, notes, bson.D{{Key: "email", Value: "n@example.com"}, {Key: "rank", Value: 3}})
	require.NoError(t, err)
	assert.Equal(t, "n@example.com", card.Email, "decrypted")
	require.NotNil(t, card.Rank)
	assert.Equal(t, 3, *card.Rank)
	assert.Equal(t, []events.Type{events.BeforeQuery, events.AfterLoad}, *seen)
	finds := log.sent("find")
	proj := finds[len(finds)-1].Lookup("projection").Document()
	elems, _ := proj.Elements()
	assert.Len(t, elems, 2, "leaves out created_at and updated_at, which the DTO does not read, and keeps what the policies need: %v", proj)

	// Each stored note of globex, and each deleted one of acme, looked up
	// by its own _id: none is found for acme.
	cur, err := db.Collection(mgm.CollName(&pagedNote{})).Find(ctx, bson.M{"$or": bson.A{bson.M{"tenant": "globex"}, bson.M{"deletedAt": bson.M{"$ne": nil}}}})
	require.NoError(t, err)
	var hidden []struct {
		ID primitive.ObjectID `bson:"_id"`
	}
	require.NoError(t, cur.All(ctx, &hidden))
	require.Len(t, hidden, 5, "3 of globex and 2 deleted of acme, in the collection itself")
	for _, h := range hidden {
		_, err := repo.FindOneAs[noteCard](acme, notes, bson.D{{Key: "_id", Value: h.ID}})
		require.ErrorIs(t, err, repo.ErrNotFound, "%v", h.ID)
	}
	_, err = repo.FindOneAs[noteCard](globex, notes, bson.D{{Key: "rank", Value: 3}})
	require.NoError(t, err, "globex's own")

	_, err = repo.FindOneAs[noteCard](ctx, notes, bson.D{})
	require.ErrorIs(t, err, tenancy.ErrNoTenant)
	_, err = repo.FindOneAs[noteCard](acme, notes, nil)
	require.ErrorIs(t, err, repo.ErrInvalidArgument, "a nil filter")
	_, err = repo.FindOneAs[noteCard](acme, notes, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "rank", Value: 1}}))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "which FindOneAs sets from repo_test.noteCard's fields")
	var none *repo.Repository[*pagedNote]
	_, err = repo.FindOneAs[noteCard](acme, none, bson.D{})
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
}

// TestFindPageAsUnderPolicies: pages of DTOs, by keyset and by offset,
// hold every live acme note once, decrypted, in the server's order, with
// the total; the DTO lacks the sort field, which the projection keeps for
// the position.
func TestFindPageAsUnderPolicies(t *testing.T) {
	notes, db := pagedNotes(t)
	acme := tenancy.WithTenant(ctx, "acme")
	want := expected(t, db, bson.D{{Key: "rank", Value: -1}, {Key: "_id", Value: 1}})
	for _, keyset := range []bool{true, false} {
		var got []primitive.ObjectID
		req := repo.PageRequest{Size: 2, Sort: bson.D{{Key: "rank", Value: -1}}, Count: true}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 5, "the pages end")
			page, err := repo.FindPageAs[noteRow](acme, notes, bson.D{}, req)
			require.NoError(t, err)
			assert.Equal(t, int64(5), page.Total)
			for _, n := range page.Models {
				assert.Equal(t, "n@example.com", n.Email, "decrypted")
				got = append(got, n.ID)
			}
			if !page.More {
				break
			}
			if keyset {
				req.After = page.Next
			} else {
				req.Offset += 2
			}
		}
		assert.Equal(t, want, got, "keyset %v", keyset)
	}
	_, err := repo.FindPageAs[noteRow](ctx, notes, bson.D{}, repo.PageRequest{Size: 2})
	require.ErrorIs(t, err, tenancy.ErrNoTenant)
	_, err = repo.FindPageAs[noteRow](acme, notes, bson.D{}, repo.PageRequest{Size: 2}, options.Find().SetProjection(bson.D{{Key: "rank", Value: 1}}))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	_, err = repo.FindPageAs[noteRow](acme, notes, bson.D{}, repo.PageRequest{})
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "FindPageAs: PageRequest.Size 0")
}
