package encryption_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func emails(ps []*Patient) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Email)
	}
	return out
}

func TestEncryptionEqualityQueries(t *testing.T) {
	db := srv.PooledDatabase(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}},
		encryption.WithNormalizer(func(field string, v any) any {
			if s, ok := v.(string); ok && field == "email" {
				return strings.ToLower(s)
			}
			return v
		}))
	for _, p := range []*Patient{{Email: "a@x", Ward: "1"}, {Email: "b@x", Ward: "1"}, {Email: "C@x", Ward: "2"}, {Email: "a@x", Ward: "2"}} {
		require.NoError(t, patients.Insert(ctx, p))
	}
	for name, tc := range map[string]struct {
		filter any
		want   []string
	}{
		"value":            {bson.M{"email": "b@x"}, []string{"b@x"}},
		"$eq":              {bson.M{"email": bson.M{"$eq": "b@x"}}, []string{"b@x"}},
		"$in":              {bson.M{"email": bson.M{"$in": []string{"b@x", "c@x"}}}, []string{"b@x", "C@x"}},
		"normalized":       {bson.D{{Key: "email", Value: "B@X"}}, []string{"b@x"}},
		"with plain field": {bson.M{"email": "a@x", "ward": "2"}, []string{"a@x"}},
		"$or":              {bson.M{"$or": bson.A{bson.M{"email": "b@x"}, bson.M{"ward": "2"}}}, []string{"b@x", "C@x", "a@x"}},
		"$and":             {bson.M{"$and": bson.A{bson.M{"email": bson.M{"$in": bson.A{"a@x", "b@x"}}}, bson.M{"ward": "1"}}}, []string{"a@x", "b@x"}},
		"$nor":             {bson.M{"$nor": bson.A{bson.M{"email": "a@x"}}}, []string{"b@x", "C@x"}},
		"$exists":          {bson.M{"email": bson.M{"$exists": true}, "ward": "1"}, []string{"a@x", "b@x"}},
		"none":             {bson.M{"email": "nobody@x"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := patients.Find(ctx, tc.filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, emails(got))
		})
	}
	var all []string
	for p, err := range patients.All(ctx, bson.M{"email": "b@x"}) {
		require.NoError(t, err)
		all = append(all, p.Email)
	}
	assert.Equal(t, []string{"b@x"}, all, "All (and Iter, which it uses) decrypt")
	n, err := patients.Count(ctx, bson.M{"email": "a@x"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	var agg []*Patient
	require.NoError(t, patients.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.M{"email": "c@x"}}}}, &agg))
	assert.Equal(t, []string{"C@x"}, emails(agg))
	var docs []bson.M
	require.NoError(t, patients.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.M{"email": "b@x"}}}, {{Key: "$project", Value: bson.M{"email": 1}}}}, &docs))
	require.Len(t, docs, 1)
	assert.Equal(t, "b@x", docs[0]["email"], "results that are not T are decrypted too")
	deleted, err := patients.DeleteMany(ctx, bson.M{"email": "a@x"})
	require.NoError(t, err)
	assert.Equal(t, int64(2), deleted.DeletedCount)

	idx, err := db.Collection("patients").Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	var names []string
	for _, s := range idx {
		names = append(names, string(s.KeysDocument))
	}
	assert.Contains(t, strings.Join(names, " "), "email_bidx", "the blind index is indexed")
}

func TestEncryptionRefusesWhatItCannotAnswer(t *testing.T) {
	db := srv.PooledDatabase(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	p := &Patient{Email: "a@x", Notes: "n", Ward: "1"}
	require.NoError(t, patients.Insert(ctx, p))
	filters := map[string]any{
		"equality without eq": bson.M{"notes": "n"},
		"$in without eq":      bson.M{"notes": bson.M{"$in": bson.A{"n"}}},
		"$ne":                 bson.M{"email": bson.M{"$ne": "a@x"}},
		"$nin":                bson.M{"email": bson.M{"$nin": bson.A{"a@x"}}},
		"$regex":              bson.M{"email": bson.M{"$regex": "^a"}},
		"regex value":         bson.M{"email": primitive.Regex{Pattern: "^a"}},
		"regex in $in":        bson.M{"email": bson.M{"$in": bson.A{primitive.Regex{Pattern: "^a"}}}},
		"$gt":                 bson.M{"email": bson.M{"$gt": "a"}},
		"$lte on a date":      bson.M{"birth": bson.M{"$lte": p.CreatedAt}},
		"$not":                bson.M{"email": bson.M{"$not": bson.M{"$eq": "a@x"}}},
		"$type":               bson.M{"email": bson.M{"$type": "string"}},
		"sub-field":           bson.M{"birth.year": 2000},
		"inside $or":          bson.M{"$or": bson.A{bson.M{"ward": "1"}, bson.M{"notes": "n"}}},
		"$expr":               bson.M{"$expr": bson.M{"$eq": bson.A{"$email", "a@x"}}},
		"$where":              bson.M{"$where": "this.email == 'a@x'"},
	}
	for name, f := range filters {
		t.Run("find "+name, func(t *testing.T) {
			_, err := patients.Find(ctx, f)
			require.ErrorIs(t, err, encryption.ErrEncryptedField)
			_, err = patients.DeleteMany(ctx, f)
			require.ErrorIs(t, err, encryption.ErrEncryptedField)
		})
	}
	calls := map[string]func() error{
		"Distinct": func() error { _, err := patients.Distinct(ctx, "email", bson.D{}); return err },
		"Distinct sub-field": func() error {
			_, err := patients.Distinct(ctx, "birth.year", bson.D{})
			return err
		},
		"sort": func() error {
			_, err := patients.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "email", Value: 1}}))
			return err
		},
		"FindOneAndUpdate sort": func() error {
			_, err := patients.FindOneAndUpdate(ctx, bson.M{}, bson.M{"$set": bson.M{"ward": "2"}}, options.FindOneAndUpdate().SetSort(bson.M{"notes": -1}))
			return err
		},
	}
	for name, st := range map[string]bson.D{
		"$sort":            {{Key: "$sort", Value: bson.M{"email": 1}}},
		"$group":           {{Key: "$group", Value: bson.M{"_id": "$email", "n": bson.M{"$sum": 1}}}},
		"$project expr":    {{Key: "$project", Value: bson.M{"x": "$notes"}}},
		"$project sub":     {{Key: "$project", Value: bson.M{"birth.year": 1}}},
		"$match":           {{Key: "$match", Value: bson.M{"notes": "n"}}},
		"$lookup":          {{Key: "$lookup", Value: bson.M{"from": "x", "localField": "email", "foreignField": "e", "as": "j"}}},
		"$$ROOT":           {{Key: "$group", Value: bson.M{"_id": nil, "all": bson.M{"$push": "$$ROOT"}}}},
		"$unwind":          {{Key: "$unwind", Value: "$notes"}},
		"$facet":           {{Key: "$facet", Value: bson.M{"a": bson.A{bson.M{"$sortByCount": "$email"}}}}},
		"$addFields exprs": {{Key: "$addFields", Value: bson.M{"e": bson.M{"$toUpper": "$email"}}}},
	} {
		calls["Aggregate "+name] = func() error {
			var out []bson.M
			return patients.Aggregate(ctx, mongo.Pipeline{st}, &out)
		}
	}
	for name, u := range map[string]any{
		"$inc":               bson.M{"$inc": bson.M{"notes": 1}},
		"$push":              bson.M{"$push": bson.M{"notes": "x"}},
		"$rename from":       bson.M{"$rename": bson.M{"email": "mail"}},
		"$rename to":         bson.M{"$rename": bson.M{"ward": "notes"}},
		"$set sub-field":     bson.M{"$set": bson.M{"birth.year": 2000}},
		"$set blind index":   bson.M{"$set": bson.M{"email_bidx": "x"}},
		"$unset blind index": bson.M{"$unset": bson.M{"email_bidx": ""}},
		"$min":               bson.M{"$min": bson.M{"birth": p.CreatedAt}},
		"$currentDate":       bson.M{"$currentDate": bson.M{"birth": true}},
		"pipeline writes":    mongo.Pipeline{{{Key: "$set", Value: bson.M{"notes": "x"}}}},
		"pipeline reads":     mongo.Pipeline{{{Key: "$set", Value: bson.M{"ward": "$notes"}}}},
	} {
		calls["UpdateOne "+name] = func() error {
			_, err := patients.UpdateOne(ctx, bson.M{"_id": p.ID}, u)
			return err
		}
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, call(), encryption.ErrEncryptedField)
		})
	}
	got, err := patients.FindByID(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, "a@x", got.Email, "nothing refused was applied")
	assert.Equal(t, "1", got.Ward)
	n, err := patients.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	_, err = patients.UpdateOne(ctx, bson.M{"_id": p.ID}, bson.M{"$unset": bson.M{"email": ""}})
	require.NoError(t, err, "$unset is allowed, and takes the blind index along")
	raw, err := db.Collection("patients").FindOne(ctx, bson.M{"_id": p.ID}).Raw()
	require.NoError(t, err)
	_, err = raw.LookupErr("email_bidx")
	assert.Error(t, err)
}

// TestEncryptionConcurrentInsertsAndFinds runs under -race in CI.
func TestEncryptionConcurrentInsertsAndFinds(t *testing.T) {
	db := srv.PooledDatabase(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				email := string(rune('a'+g)) + strings.Repeat("x", i) + "@x"
				if err := patients.Insert(ctx, &Patient{Email: email, Notes: "n"}); err != nil {
					errs <- err
					return
				}
				got, err := patients.FindOne(ctx, bson.M{"email": email})
				if err != nil {
					errs <- err
					return
				}
				if got.Email != email {
					errs <- assert.AnError
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	n, err := patients.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(60), n)
}
