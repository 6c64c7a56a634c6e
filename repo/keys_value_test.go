package repo_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// badge has an inc key, a uuid key of uuid.UUID (binary subtype 4) and
// a version.
type badge struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64     `bson:"no" auto:"inc"`
	Ref              uuid.UUID `bson:"ref" auto:"uuid"`
	Title            string    `bson:"title"`
	V                int64     `bson:"v" auto:"version"`
}

// nilUUID is not zero in Go, and writes the nil UUID.
type nilUUID struct{ set bool }

func (nilUUID) MarshalBSONValue() (bsontype.Type, []byte, error) {
	return bson.TypeBinary, append([]byte{16, 0, 0, 0, 4}, make([]byte, 16)...), nil
}

// TestUpsertKeysAreJudgedAsWritten: the key an upsert gives its new
// document, by $setOnInsert or by the filter's equality, is judged as the
// repository's registry writes it, not by its Go value: a json.Number
// "0" (written as the number 0), a value marshaler that writes the nil
// UUID, a string for an integer key, are refused through UpdateOne,
// FindOneAndUpdate and BulkWrite, naming the field, and nothing is
// stored. An upsert's filter may not choose the version. Keys that are
// written non-zero and of the field's type pass.
func TestUpsertKeysAreJudgedAsWritten(t *testing.T) {
	db := srv.Database(t)
	keys, err := autokeys.New(db)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(keys)
	badges, err := repo.New[*badge](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	coll := db.Collection("badges")
	up := options.Update().SetUpsert(true)
	title := bson.D{{Key: "title", Value: "b"}}
	setOnInsert := func(f string, v any) bson.D {
		return bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: f, Value: v}}}}
	}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "title", Value: "b"}}}}
	tries := []struct {
		name, field, says string
		run               func() error
	}{
		{"UpdateOne $setOnInsert json.Number 0", "no", "written as zero", func() error {
			_, err := badges.UpdateOne(ctx, title, setOnInsert("no", json.Number("0")), up)
			return err
		}},
		{"FindOneAndUpdate $setOnInsert json.Number 0", "no", "written as zero", func() error {
			_, err := badges.FindOneAndUpdate(ctx, title, setOnInsert("no", json.Number("0")), options.FindOneAndUpdate().SetUpsert(true))
			return err
		}},
		{"BulkWrite $setOnInsert json.Number 0", "no", "written as zero", func() error {
			_, err := badges.BulkWrite(ctx, []mongo.WriteModel{mongo.NewUpdateOneModel().SetFilter(title).
				SetUpdate(setOnInsert("no", json.Number("0"))).SetUpsert(true)})
			return err
		}},
		{"filter json.Number 0", "no", "written as zero", func() error {
			_, err := badges.UpdateOne(ctx, append(title, bson.E{Key: "no", Value: json.Number("0")}), set, up)
			return err
		}},
		{"$setOnInsert marshaler of the nil UUID", "ref", "written as zero", func() error {
			_, err := badges.UpdateOne(ctx, title, setOnInsert("ref", nilUUID{set: true}), up)
			return err
		}},
		{"$setOnInsert string inc key", "no", "the field (int64) is written as BSON 64-bit integer", func() error {
			_, err := badges.UpdateOne(ctx, title, setOnInsert("no", "not-a-number"), up)
			return err
		}},
		{"$setOnInsert string uuid key", "ref", "the field (uuid.UUID) is written as BSON binary", func() error {
			_, err := badges.UpdateOne(ctx, title, setOnInsert("ref", uuid.NewString()), up)
			return err
		}},
		{"filter chooses the version", "v", "never names the version", func() error {
			_, err := badges.UpdateOne(ctx, append(title, bson.E{Key: "v", Value: 41}), set, up)
			return err
		}},
	}
	for _, c := range tries {
		err := c.run()
		assert.ErrorIs(t, err, repo.ErrInvalidArgument, c.name)
		assert.ErrorContains(t, err, "*repo_test.badge field "+c.field+" `auto:", c.name)
		assert.ErrorContains(t, err, c.says, c.name)
		if !assert.Empty(t, mongotest.Docs(t, coll, bson.D{}), "%s stored a document", c.name) {
			_, err := coll.DeleteMany(ctx, bson.D{})
			require.NoError(t, err)
		}
	}

	// Keys written non-zero and of the field's type pass.
	ref := uuid.New()
	_, err = badges.UpdateOne(ctx, bson.D{{Key: "title", Value: "n"}}, setOnInsert("no", json.Number("7")), up)
	require.NoError(t, err)
	_, err = badges.UpdateOne(ctx, bson.D{{Key: "title", Value: "i"}, {Key: "no", Value: int32(8)}, {Key: "ref", Value: ref}}, set, up)
	require.NoError(t, err)
	docs := mongotest.Docs(t, coll, bson.D{})
	require.Len(t, docs, 2)
	for _, d := range docs {
		assert.Contains(t, []int64{7, 8}, d.Lookup("no").AsInt64(), "%s", d)
		assert.EqualValues(t, 1, d.Lookup("v").AsInt64(), "%s", d)
	}
}
