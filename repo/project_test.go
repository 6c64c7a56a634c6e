package repo_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// noteCard is a DTO of pagedNote: its rank and its encrypted email.
type noteCard struct {
	Rank  *int   `bson:"rank,omitempty"`
	Email string `bson:"email"`
}

// watchedNotes stores pagedNotes' notes under the three policies, and
// returns their repository and database, the commands sent, and the types
// of the find events published for pagedNote.
func watchedNotes(t *testing.T) (*repo.Repository[*pagedNote], *mongo.Database, *sentLog, *[]events.Type) {
	t.Helper()
	log := &sentLog{cmds: map[string][]bson.Raw{}}
	bus := policyBus(t)
	notes, db := pagedNotesIn(t, srv.Database(t, log.monitor()), bus)
	seen := new([]events.Type)
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Op == events.OpFind {
			*seen = append(*seen, e.Type)
		}
		return nil
	}), events.ForModel[*pagedNote]())
	return notes, db, log, seen
}

// TestFindAsUnderPolicies: FindAs reads acme's live notes only, decrypted,
// through a filter on the encrypted field too; it fails closed without a
// tenant; it publishes the model's BeforeQuery and AfterLoad, and no
// AfterConvert; and it sends a projection of the DTO's fields plus what
// the policies need, and nothing more.
func TestFindAsUnderPolicies(t *testing.T) {
	notes, _, log, seen := watchedNotes(t)
	acme := tenancy.WithTenant(ctx, "acme")

	cards, err := repo.FindAs[noteCard](acme, notes, bson.D{})
	require.NoError(t, err)
	require.Len(t, cards, 5, "acme's live notes: not globex's, not the deleted")
	for _, c := range cards {
		assert.Equal(t, "n@example.com", c.Email, "decrypted")
	}
	assert.Equal(t, events.BeforeQuery, (*seen)[0])
	assert.Len(t, *seen, 6, "BeforeQuery, then AfterLoad per document")
	assert.NotContains(t, *seen, events.AfterConvert)

	finds := log.sent("find")
	proj := finds[len(finds)-1].Lookup("projection").Document()
	var keys []string
	elems, _ := proj.Elements()
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	assert.Equal(t, []string{"created_at", "updated_at"}, keys, "the fields noteCard does not read, and no policy field")

	cards, err = repo.FindAs[noteCard](acme, notes, bson.D{{Key: "email", Value: "n@example.com"}, {Key: "rank", Value: 2}})
	require.NoError(t, err)
	assert.Len(t, cards, 3, "a filter on the encrypted field, through its blind index; the deleted rank 2 hidden")

	_, err = repo.FindAs[noteCard](ctx, notes, bson.D{})
	require.ErrorIs(t, err, tenancy.ErrNoTenant)
	_, err = repo.FindAs[noteCard](acme, notes, bson.D{}, options.Find().SetSort(bson.D{{Key: "email", Value: 1}}))
	require.ErrorIs(t, err, encryption.ErrEncryptedField, "a sort on an encrypted field is refused, as for Find")
}

// TestFindAsDecodesWhatListenersLeave: the DTO is decoded from the
// document as AfterLoad's listeners leave it.
func TestFindAsDecodesWhatListenersLeave(t *testing.T) {
	bus, posts, _ := setup[*Post](t, nil)
	require.NoError(t, posts.Insert(ctx, &Post{Title: "draft"}))
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		d, err := mql.ToD(e.Document)
		if err != nil {
			return err
		}
		for i := range d {
			if d[i].Key == "title" {
				d[i].Value = "edited"
			}
		}
		e.Document, err = bson.Marshal(d)
		return err
	}), events.On(events.AfterLoad))
	type title struct {
		Title string `bson:"title"`
		Views int    `bson:"views"`
	}
	got, err := repo.FindAs[title](ctx, posts, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, []title{{Title: "edited"}}, got)
}

// TestFindAsRefuses: a DTO key the model lacks, a DTO that is not a
// struct, and options that set a projection are refused, named.
func TestFindAsRefuses(t *testing.T) {
	_, posts, _ := setup[*Post](t, nil)
	type typo struct {
		Titel string `bson:"titel"`
	}
	_, err := repo.FindAs[typo](ctx, posts, bson.D{})
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, `DTO repo_test.typo: field Titel reads key "titel", which is no field of *repo_test.Post`)
	_, err = repo.FindAs[*Post](ctx, posts, bson.D{})
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "want a struct type")
	type title struct {
		Title string `bson:"title"`
	}
	_, err = repo.FindAs[title](ctx, posts, bson.D{}, options.Find().SetProjection(bson.D{{Key: "views", Value: 1}}))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	_, err = repo.FindAs[title](ctx, posts, nil)
	require.ErrorIs(t, err, repo.ErrInvalidArgument, "a nil filter")
}
