package repo_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// pagedNote is under the three policies; Rank has ties, and is missing
// from some documents.
type pagedNote struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string     `bson:"tenant" policy:"tenant"`
	Rank             *int       `bson:"rank,omitempty"`
	Email            string     `bson:"email" policy:"encrypt,eq"`
	DeletedAt        *time.Time `bson:"deletedAt,omitempty" policy:"softdelete,at"`
}

// policyBus returns a bus with the three policies, encryption under a
// fresh key.
func policyBus(t *testing.T) *events.Bus {
	t.Helper()
	secret := make([]byte, 32)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	enc, err := encryption.New(encryption.Keys{{ID: "k", Secret: secret}})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(enc)
	bus.Register(tenancy.New())
	bus.Register(softdelete.New())
	return bus
}

// pagedNotes stores notes of acme (two of them soft-deleted) and globex,
// ranks interleaved, and returns the repository and the database.
func pagedNotes(t *testing.T) (*repo.Repository[*pagedNote], *mongo.Database) {
	t.Helper()
	return pagedNotesIn(t, srv.Database(t), policyBus(t))
}

// pagedNotesIn stores pagedNotes' notes in db, with a repository on bus.
func pagedNotesIn(t *testing.T, db *mongo.Database, bus *events.Bus) (*repo.Repository[*pagedNote], *mongo.Database) {
	t.Helper()
	notes, err := repo.New[*pagedNote](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	rank := func(n int) *int { return &n }
	ranks := []*int{rank(2), nil, rank(1), rank(2), rank(3), nil, rank(1), rank(2), rank(3), rank(2)}
	for i, r := range ranks {
		ctx := tenancy.WithTenant(ctx, []string{"acme", "globex"}[i%3/2])
		n := &pagedNote{Rank: r, Email: "n@example.com"}
		require.NoError(t, notes.Insert(ctx, n))
		if i == 3 || i == 6 {
			require.NoError(t, notes.Delete(ctx, n))
		}
	}
	return notes, db
}

// expected returns the _ids of acme's live notes in the order sort gives,
// read from the collection itself.
func expected(t *testing.T, db *mongo.Database, sort bson.D) []primitive.ObjectID {
	t.Helper()
	cur, err := db.Collection(mgm.CollName(&pagedNote{})).Find(ctx, bson.M{"tenant": "acme", "deletedAt": nil}, options.Find().SetSort(sort))
	require.NoError(t, err)
	var docs []struct {
		ID primitive.ObjectID `bson:"_id"`
	}
	require.NoError(t, cur.All(ctx, &docs))
	ids := make([]primitive.ObjectID, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids
}

// TestFindPageUnderPolicies pages acme's notes by keyset and by offset,
// ascending and descending on a field with ties and missing values: every
// live acme note comes once, in the server's order with _id as the
// tiebreaker, decrypted; no globex note and no deleted one appears on any
// page, and the total counts acme's live notes only.
func TestFindPageUnderPolicies(t *testing.T) {
	notes, db := pagedNotes(t)
	acme := tenancy.WithTenant(ctx, "acme")
	for _, dir := range []int{1, -1} {
		sort := bson.D{{Key: "rank", Value: dir}}
		want := expected(t, db, bson.D{{Key: "rank", Value: dir}, {Key: "_id", Value: 1}})
		require.Len(t, want, 5)
		for _, keyset := range []bool{true, false} {
			var got []primitive.ObjectID
			req := repo.PageRequest{Size: 2, Sort: sort, Count: true}
			for pages := 0; ; pages++ {
				require.Less(t, pages, 5, "the pages end")
				page, err := notes.FindPage(acme, bson.D{}, req)
				require.NoError(t, err)
				assert.Equal(t, int64(5), page.Total)
				for _, n := range page.Models {
					assert.Equal(t, "acme", n.Tenant)
					assert.Equal(t, "n@example.com", n.Email, "decrypted")
					assert.Nil(t, n.DeletedAt)
					got = append(got, n.ID)
				}
				if !page.More {
					assert.Empty(t, page.Next)
					break
				}
				require.Len(t, page.Models, 2)
				if keyset {
					req.After = page.Next
				} else {
					req.Offset += 2
				}
			}
			assert.Equal(t, want, got, "dir %d, keyset %v", dir, keyset)
		}
	}
}

// TestFindPagePositionStaysConfined: a position made on acme's pages and
// handed to another tenant, or to a page without a tenant, reaches no
// acme note; one for another sort, or not made by FindPage, is refused.
func TestFindPagePositionStaysConfined(t *testing.T) {
	notes, _ := pagedNotes(t)
	acme, globex := tenancy.WithTenant(ctx, "acme"), tenancy.WithTenant(ctx, "globex")
	sort := bson.D{{Key: "rank", Value: 1}}
	first, err := notes.FindPage(acme, bson.D{}, repo.PageRequest{Size: 1, Sort: sort})
	require.NoError(t, err)
	require.True(t, first.More)
	assert.Equal(t, int64(-1), first.Total, "not asked for")

	theirs, err := notes.FindPage(globex, bson.D{}, repo.PageRequest{Size: 10, Sort: sort, After: first.Next, Count: true})
	require.NoError(t, err)
	for _, n := range theirs.Models {
		assert.Equal(t, "globex", n.Tenant)
	}
	assert.Equal(t, int64(3), theirs.Total)

	_, err = notes.FindPage(ctx, bson.D{}, repo.PageRequest{Size: 10, Sort: sort, After: first.Next})
	require.ErrorIs(t, err, tenancy.ErrNoTenant, "fails closed")

	_, err = notes.FindPage(acme, bson.D{}, repo.PageRequest{Size: 1, Sort: bson.D{{Key: "rank", Value: -1}}, After: first.Next})
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, "not a position that FindPage made (Page.Next) for this PageRequest.Sort")
	for _, bad := range []string{"%%%", "AAAA", first.Next[:len(first.Next)-4]} {
		_, err = notes.FindPage(acme, bson.D{}, repo.PageRequest{Size: 1, Sort: sort, After: bad})
		require.ErrorIs(t, err, repo.ErrInvalidArgument, "%q", bad)
	}
}

// TestFindPageRefusesBadRequests: each mistake is named before anything
// is sent.
func TestFindPageRefusesBadRequests(t *testing.T) {
	notes, _ := pagedNotes(t)
	acme := tenancy.WithTenant(ctx, "acme")
	cases := map[string]struct {
		filter any
		req    repo.PageRequest
		opts   []*options.FindOptions
	}{
		"positive size":            {bson.D{}, repo.PageRequest{}, nil},
		"Offset -1":                {bson.D{}, repo.PageRequest{Size: 1, Offset: -1}, nil},
		"both Offset and After":    {bson.D{}, repo.PageRequest{Size: 1, Offset: 1, After: "x"}, nil},
		"want 1 or -1":             {bson.D{}, repo.PageRequest{Size: 1, Sort: bson.D{{Key: "rank", Value: 2}}}, nil},
		`field "$natural"`:         {bson.D{}, repo.PageRequest{Size: 1, Sort: bson.D{{Key: "$natural", Value: 1}}}, nil},
		`names field "rank" twice`: {bson.D{}, repo.PageRequest{Size: 1, Sort: bson.D{{Key: "rank", Value: 1}, {Key: "rank", Value: -1}}}, nil},
		"use PageRequest.Sort":     {bson.D{}, repo.PageRequest{Size: 1}, []*options.FindOptions{options.Find().SetLimit(5)}},
		"nil filter":               {nil, repo.PageRequest{Size: 1}, nil},
	}
	for want, c := range cases {
		_, err := notes.FindPage(acme, c.filter, c.req, c.opts...)
		require.ErrorIs(t, err, repo.ErrInvalidArgument, want)
		assert.ErrorContains(t, err, want)
	}
	rank := repo.PageRequest{Size: 1, Sort: bson.D{{Key: "rank", Value: 1}}}
	_, err := notes.FindPage(acme, bson.D{}, rank, options.Find().SetProjection(bson.D{{Key: "email", Value: 1}}))
	require.ErrorIs(t, err, repo.ErrInvalidArgument)
	assert.ErrorContains(t, err, `has no sort field "rank": the projection must keep every field of PageRequest.Sort`)
	_, err = notes.FindPage(acme, bson.D{}, repo.PageRequest{Size: 1, Sort: bson.D{{Key: "email", Value: 1}}})
	require.ErrorIs(t, err, encryption.ErrEncryptedField, "the policy refuses a sort on an encrypted field, as for Find")
}

// TestFindPageIsOneOperation: interceptors see FindPage, FindAs,
// FindOneAs and FindPageAs as one operation each, with what they returned, and the model read past the
// page to learn More publishes no AfterLoad.
func TestFindPageIsOneOperation(t *testing.T) {
	bus, posts, _ := setup[*Post](t, nil)
	require.NoError(t, posts.InsertMany(ctx, []*Post{{Title: "a"}, {Title: "b"}, {Title: "c"}}))
	var ops []string
	loads := 0
	bus.Register(events.InterceptorFunc(func(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
		err := next(ctx)
		ops = append(ops, fmt.Sprint(o.Method, " ", o.Returned))
		return err
	}))
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { loads++; return nil }), events.On(events.AfterLoad))
	page, err := posts.FindPage(ctx, bson.D{}, repo.PageRequest{Size: 2, Count: true})
	require.NoError(t, err)
	assert.True(t, page.More)
	assert.Equal(t, 2, loads, "the third post is not loaded")
	type title struct {
		Title string `bson:"title"`
	}
	_, err = repo.FindAs[title](ctx, posts, bson.D{})
	require.NoError(t, err)
	_, err = repo.FindOneAs[title](ctx, posts, bson.D{})
	require.NoError(t, err)
	loads = 0
	_, err = repo.FindPageAs[title](ctx, posts, bson.D{}, repo.PageRequest{Size: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, loads, "FindPageAs loads only the page's document")
	assert.Equal(t, []string{"FindPage 2", "FindAs 3", "FindOneAs 1", "FindPageAs 1"}, ops)
}
