package repo_test

import (
	"fmt"
	"testing"

	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestBulkWriteChecksEveryModelFirst: a write model BulkWrite cannot run
// whole (a nil one of each kind, a nil document, filter or update), after
// a good one, ordered or not, gets the call refused with
// ErrInvalidArgument naming its index, without a panic and before the
// good one is written.
func TestBulkWriteChecksEveryModelFirst(t *testing.T) {
	_, users, db := setup[*plain](t, nil)
	set := bson.M{"$set": bson.M{"name": "x"}}
	bad := map[string]mongo.WriteModel{
		"nil":                         nil,
		"nil InsertOneModel":          (*mongo.InsertOneModel)(nil),
		"nil UpdateOneModel":          (*mongo.UpdateOneModel)(nil),
		"nil UpdateManyModel":         (*mongo.UpdateManyModel)(nil),
		"nil ReplaceOneModel":         (*mongo.ReplaceOneModel)(nil),
		"nil DeleteOneModel":          (*mongo.DeleteOneModel)(nil),
		"nil DeleteManyModel":         (*mongo.DeleteManyModel)(nil),
		"no Document":                 mongo.NewInsertOneModel(),
		"nil model Document":          mongo.NewInsertOneModel().SetDocument((*plain)(nil)),
		"foreign Document":            mongo.NewInsertOneModel().SetDocument(bson.M{"name": "x"}),
		"no Replacement":              mongo.NewReplaceOneModel().SetFilter(bson.D{}),
		"nil model Replacement":       mongo.NewReplaceOneModel().SetFilter(bson.D{}).SetReplacement((*plain)(nil)),
		"replace without Filter":      mongo.NewReplaceOneModel().SetReplacement(&plain{Name: "x"}),
		"update one without Filter":   mongo.NewUpdateOneModel().SetUpdate(set),
		"update many without Filter":  mongo.NewUpdateManyModel().SetUpdate(set),
		"update one with nil Filter":  mongo.NewUpdateOneModel().SetFilter(bson.D(nil)).SetUpdate(set),
		"update one without Update":   mongo.NewUpdateOneModel().SetFilter(bson.D{}),
		"update many with nil Update": mongo.NewUpdateManyModel().SetFilter(bson.D{}).SetUpdate(bson.M(nil)),
		"delete one without Filter":   mongo.NewDeleteOneModel(),
		"delete many without Filter":  mongo.NewDeleteManyModel(),
	}
	for name, wm := range bad {
		for _, ordered := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s ordered=%v", name, ordered), func(t *testing.T) {
				good := mongo.NewInsertOneModel().SetDocument(&plain{Name: name})
				var err error
				require.NotPanics(t, func() {
					_, err = users.BulkWrite(ctx, []mongo.WriteModel{good, wm}, options.BulkWrite().SetOrdered(ordered))
				})
				require.ErrorIs(t, err, repo.ErrInvalidArgument)
				assert.ErrorContains(t, err, "models[1]")
				assert.ErrorContains(t, err, "no write model was written")
				assert.Zero(t, count(t, db, "plains", nil), "the good model was written")
			})
		}
	}
}
