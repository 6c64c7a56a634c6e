package encryption_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// TestEncDefendWatchReadsRefused: a change stream's pipeline on a model
// with encrypted fields is refused, as an Aggregate's is, when it reads an
// encrypted field without naming it: by $getField, through the whole full
// document ($objectToArray of "$fullDocument", $$ROOT, $$CURRENT), in
// JavaScript, by a search stage or a join field. What reads plain fields
// only still passes.
func TestEncDefendWatchReadsRefused(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	capture(bus, events.BeforeQuery)
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	expr := func(v any) bson.A {
		return bson.A{bson.M{"$match": bson.M{"$expr": bson.M{"$gt": bson.A{bson.M{"$binarySize": v}, 40}}}}}
	}
	for name, p := range map[string]bson.A{
		"$getField of $fullDocument":   expr(bson.M{"$getField": bson.M{"field": "notes", "input": "$fullDocument"}}),
		"$getField shorthand":          expr(bson.M{"$getField": "notes"}),
		"$objectToArray $fullDocument": expr(bson.M{"$arrayElemAt": bson.A{bson.M{"$objectToArray": "$fullDocument"}, 3}}),
		"$objectToArray pre-image":     expr(bson.M{"$arrayElemAt": bson.A{bson.M{"$objectToArray": "$fullDocumentBeforeChange"}, 3}}),
		"$objectToArray updatedFields": expr(bson.M{"$arrayElemAt": bson.A{bson.M{"$objectToArray": "$updateDescription.updatedFields"}, 0}}),
		"$objectToArray $$ROOT":        expr(bson.M{"$arrayElemAt": bson.A{bson.M{"$objectToArray": "$$ROOT.fullDocument"}, 3}}),
		"$$CURRENT":                    expr("$$CURRENT"),
		"$replaceWith $fullDocument":   {bson.M{"$replaceWith": "$fullDocument"}},
		"$function":                    {bson.M{"$addFields": bson.M{"x": bson.M{"$function": bson.M{"body": "function(d){return d}", "args": bson.A{"$ward"}, "lang": "js"}}}}},
		"$where":                       {bson.M{"$match": bson.M{"$where": "this.fullDocument['no'+'tes'].length > 40"}}},
		"JavaScript naming a field":    {bson.M{"$addFields": bson.M{"x": primitive.JavaScript("d.notes")}}},
		"$search":                      {bson.M{"$search": bson.M{"text": bson.M{"query": "a", "path": "ward"}}}},
		"join field":                   {bson.M{"$lookup": bson.M{"from": "patients", "localField": "fullDocument.email", "foreignField": "ward", "as": "j"}}},
	} {
		_, err := patients.Watch(ctx, p)
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, name)
	}
	for name, p := range map[string]bson.A{
		"operationType":        {bson.M{"$match": bson.M{"operationType": "insert"}}},
		"a plain field":        {bson.M{"$match": bson.M{"fullDocument.ward": "w"}}},
		"a plain field's size": expr("$fullDocument.ward"),
		"documentKey":          {bson.M{"$addFields": bson.M{"id": "$documentKey._id"}}},
		"$project":             {bson.M{"$project": bson.M{"fullDocument": 1, "operationType": 1}}},
	} {
		_, err := patients.Watch(ctx, p)
		assert.ErrorIs(t, err, errCaptured, name)
	}
}
