// Written by hand: the sorts driver v2's UpdateOne and ReplaceOne take,
// which driver v1's do not.

package encryption_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/mongov2/listeners/encryption"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestSortOfUpdateOneOnEncryptedField: UpdateOne's and ReplaceOne's sort,
// and their write models', new in driver v2, is judged as FindOneAndUpdate's is: a sort on an
// encrypted field is refused.
func TestSortOfUpdateOneOnEncryptedField(t *testing.T) {
	db := srv.Database(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	p := &Patient{Email: "a@x", Notes: "n", Ward: "1"}
	require.NoError(t, patients.Insert(ctx, p))

	_, err := patients.UpdateOne(ctx, bson.M{}, bson.M{"$set": bson.M{"ward": "2"}}, options.UpdateOne().SetSort(bson.M{"notes": -1}))
	require.ErrorIs(t, err, encryption.ErrEncryptedField, "UpdateOne")
	_, err = patients.ReplaceOne(ctx, bson.M{}, &Patient{Email: "b@x", Ward: "3"}, options.Replace().SetSort(bson.M{"email": 1}))
	require.ErrorIs(t, err, encryption.ErrEncryptedField, "ReplaceOne")
	_, err = patients.BulkWrite(ctx, []mongo.WriteModel{mongo.NewUpdateOneModel().SetFilter(bson.M{}).SetUpdate(bson.M{"$set": bson.M{"ward": "2"}}).SetSort(bson.M{"notes": -1})})
	require.ErrorIs(t, err, encryption.ErrEncryptedField, "BulkWrite UpdateOneModel")
	_, err = patients.BulkWrite(ctx, []mongo.WriteModel{mongo.NewReplaceOneModel().SetFilter(bson.M{}).SetReplacement(&Patient{Ward: "3"}).SetSort(bson.M{"email": 1})})
	require.ErrorIs(t, err, encryption.ErrEncryptedField, "BulkWrite ReplaceOneModel")
}
