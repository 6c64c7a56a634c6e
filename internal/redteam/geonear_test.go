package redteam_test

import (
	"crypto/rand"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// Contact has encrypted fields and no other policy.
type Contact struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string    `bson:"email" policy:"encrypt,eq"`
	Loc              []float64 `bson:"loc"`
}

// contacts returns a repository of Contact on a bus with the encryption
// only, and the log of the commands its client sends.
func contacts(t *testing.T) (*repo.Repository[*Contact], *wireLog) {
	t.Helper()
	log := &wireLog{}
	db := srv.Database(t, log.options())
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret}})
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(enc)
	r, err := repo.New[*Contact](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, r.Insert(ctx, &Contact{Email: "ann@example.com", Loc: []float64{0, 0}}))
	return r, log
}

// geoNear is a $geoNear stage whose query is query.
func geoNear(query any) bson.D {
	return bson.D{{Key: "$geoNear", Value: bson.D{
		{Key: "near", Value: bson.A{0, 0}}, {Key: "distanceField", Value: "d"},
		{Key: "query", Value: query},
	}}}
}

// $geoNear carries a filter in its "query" field: an equality on an
// encrypted field in it is rewritten into its blind index, as in $match,
// and never goes to the server, or its logs and profiler, in plaintext.
func TestDefendGeoNearQuerySentInPlaintext(t *testing.T) {
	r, log := contacts(t)
	p := mongo.Pipeline{geoNear(bson.D{{Key: "email", Value: "ann@example.com"}})}
	var out []bson.M
	err := r.Aggregate(ctx, p, &out)
	t.Logf("aggregate: %v", err) // FerretDB 1.x has no $geoNear: the server refuses the stage
	sent := log.sent("aggregate")
	require.Len(t, sent, 1, "the rewritten pipeline is sent")
	assert.NotContains(t, sent[0].String(), "ann@example.com", "an equality on an encrypted field was sent in plaintext")
	assert.Contains(t, sent[0].String(), "email_bidx", "the equality was not rewritten into the blind index")
	if err == nil {
		assert.Len(t, out, 1, "the blind index finds the document")
	}
}

// What the encryption cannot rewrite in a $geoNear query, and a $geoNear
// in a sub-pipeline, where nothing is rewritten, is refused before
// anything is sent; so are the search stages, whose conditions it cannot
// read.
func TestDefendGeoNearQueryRefused(t *testing.T) {
	r, log := contacts(t)
	regex := bson.D{{Key: "email", Value: primitive.Regex{Pattern: "^ann"}}}
	eq := bson.D{{Key: "email", Value: "ann@example.com"}}
	for name, p := range map[string]mongo.Pipeline{
		"regex":         {geoNear(regex)},
		"$lookup":       {{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "contacts"}, {Key: "as", Value: "x"}, {Key: "pipeline", Value: bson.A{geoNear(eq)}}}}}},
		"$unionWith":    {{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "contacts"}, {Key: "pipeline", Value: bson.A{geoNear(eq)}}}}}},
		"$vectorSearch": {{{Key: "$vectorSearch", Value: bson.D{{Key: "index", Value: "v"}, {Key: "path", Value: "loc"}, {Key: "filter", Value: eq}}}}},
		"$search":       {{{Key: "$search", Value: bson.D{{Key: "text", Value: bson.D{{Key: "query", Value: "ann@example.com"}, {Key: "path", Value: "email"}}}}}}},
	} {
		var out []bson.M
		err := r.Aggregate(ctx, p, &out)
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, name)
	}
	assert.Empty(t, log.sent("aggregate"), "a refused pipeline was sent")
}
