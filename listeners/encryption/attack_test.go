package encryption_test

// Attacks on the field-level encryption. Each TestEncDefend* test asserts
// that the policy withstands one attack; TestEncHeld* tests are attacks
// that the design withstands without a dedicated defence.

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// IntPatient has an integer _id, as many legacy schemas do.
type IntPatient struct {
	ID    int64  `bson:"_id"`
	Email string `bson:"email" policy:"encrypt,eq"`
	Notes string `bson:"notes" policy:"encrypt"`
}

func (p *IntPatient) PrepareID(id any) (any, error) { return id, nil }
func (p *IntPatient) GetID() any                    { return p.ID }
func (p *IntPatient) SetID(id any)                  { p.ID, _ = id.(int64) }

// TPatient is a tenant's patient with an encrypted field.
type TPatient struct {
	ID     primitive.ObjectID `bson:"_id"`
	Tenant string             `bson:"tenant" policy:"tenant"`
	Notes  string             `bson:"notes" policy:"encrypt"`
}

func (p *TPatient) PrepareID(id any) (any, error) { return id, nil }
func (p *TPatient) GetID() any                    { return p.ID }
func (p *TPatient) SetID(id any)                  { p.ID, _ = id.(primitive.ObjectID) }

var errCaptured = errors.New("enc_attack_test: captured before sending")

// capture registers, as a policy that runs after every other policy, a
// listener that records what the policies left for t and aborts the
// operation, so that nothing is sent.
func capture(bus *events.Bus, t events.Type) *events.Event {
	got := &events.Event{}
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		*got = *e
		return errCaptured
	}), events.On(t), events.AsPolicy(), events.Order(1<<40))
	return got
}

func rawByID(t testing.TB, db *mongo.Database, coll string, id any) bson.Raw {
	t.Helper()
	raw, err := db.Collection(coll).FindOne(ctx, bson.M{"_id": id}).Raw()
	require.NoError(t, err)
	return raw
}

func binOf(t testing.TB, raw bson.Raw, field string) primitive.Binary {
	t.Helper()
	sub, data, ok := raw.Lookup(field).BinaryOK()
	require.True(t, ok, field)
	return primitive.Binary{Subtype: sub, Data: data}
}

// 1. Confused-deputy decryption oracle. Attacker A has a dump of the
// database (victim's _id and ciphertexts) and may run an Aggregate through
// the app on their own documents. A stage that overwrites _id and the
// encrypted fields with literals used to make the app decrypt the victim's
// values for A. Results of a pipeline with any stage that can change a
// document are now never decrypted.
func TestEncDefendAggregateLiteralDecryptionOracle(t *testing.T) {
	db := srv.Database(t)
	patients, enc := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	victim := &Patient{Email: "victim@x", Notes: "victim has HIV", Ward: "victim-ward"}
	require.NoError(t, patients.Insert(ctx, victim))
	require.NoError(t, patients.Insert(ctx, &Patient{Email: "mallory@x", Notes: "m", Ward: "mallory"}))

	dump := rawByID(t, db, "patients", victim.ID) // read access to the database
	planted := bson.M{
		"_id":   victim.ID,
		"notes": binOf(t, dump, "notes"),
		"email": binOf(t, dump, "email"),
		"birth": binOf(t, dump, "birth"),
	}
	for name, stage := range map[string]bson.M{
		"$set":       {"$set": planted},
		"$addFields": {"$addFields": planted},
	} {
		t.Run(name, func(t *testing.T) {
			pipeline := bson.A{bson.M{"$match": bson.M{"ward": "mallory"}}, stage}
			var out []*Patient
			err := patients.Aggregate(ctx, pipeline, &out)
			require.Error(t, err, "the ciphertext is not decrypted, so it cannot decode into a string")
			assert.NotContains(t, err.Error(), "victim has HIV")
			for _, p := range out {
				assert.NotEqual(t, "victim has HIV", p.Notes)
			}
			var m []bson.M
			require.NoError(t, patients.Aggregate(ctx, pipeline, &m))
			require.Len(t, m, 1)
			assert.IsType(t, primitive.Binary{}, m[0]["notes"], "bson.M keeps the ciphertext")
			assert.NotContains(t, fmt.Sprint(m), "victim has HIV")
		})
	}
	// Stages FerretDB cannot run: the result they would give, as AfterLoad
	// sees it.
	doc, err := bson.Marshal(bson.D{{Key: "_id", Value: victim.ID}, {Key: "notes", Value: binOf(t, dump, "notes")}})
	require.NoError(t, err)
	for name, stage := range map[string]bson.M{
		"$project literal": {"$project": bson.M{"_id": bson.M{"$literal": victim.ID}, "notes": bson.M{"$literal": binOf(t, dump, "notes")}}},
		"$project 2":       {"$project": bson.M{"notes": 2}},
		"$replaceWith":     {"$replaceWith": bson.M{"$literal": planted}},
		"$replaceRoot":     {"$replaceRoot": bson.M{"newRoot": bson.M{"$literal": planted}}},
		"$group":           {"$group": bson.M{"_id": bson.M{"$literal": victim.ID}, "notes": bson.M{"$first": bson.M{"$literal": binOf(t, dump, "notes")}}}},
		"$unset computed":  {"$unset": bson.M{"x": 1}},
		"$facet":           {"$facet": bson.M{"a": bson.A{bson.M{"$match": bson.M{}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			e := &events.Event{Type: events.AfterLoad, Op: events.OpAggregate, Collection: "patients",
				ModelType: patients.Schema().Type, Pipeline: []bson.M{{"$match": bson.M{}}, stage}, Document: doc}
			require.NoError(t, enc.HandleEvent(ctx, e))
			assert.Equal(t, bson.Raw(doc), e.Document, "not decrypted")
		})
	}

	// Pipelines that only select, order and trim stored documents still decrypt.
	var out []*Patient
	require.NoError(t, patients.Aggregate(ctx, bson.A{
		bson.M{"$match": bson.M{"ward": "victim-ward"}}, bson.M{"$sort": bson.M{"_id": 1}}, bson.M{"$skip": 0},
		bson.M{"$limit": 5}, bson.M{"$project": bson.M{"ward": 0}}, bson.M{"$unset": bson.A{"x"}},
	}, &out))
	require.Len(t, out, 1)
	assert.Equal(t, "victim has HIV", out[0].Notes)
}

// 1b. Same oracle through a find projection. MongoDB ≥ 4.4 evaluates
// aggregation expressions ($literal) in find/findAndModify projections: on
// a model with encrypted fields only inclusion and exclusion are allowed.
func TestEncDefendFindProjectionInspected(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	capture(bus, events.BeforeQuery)
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	proj := bson.M{"_id": bson.M{"$literal": primitive.NewObjectID()}, "notes": bson.M{"$literal": primitive.Binary{Subtype: 0x8E, Data: []byte{1}}}}
	_, err = patients.Find(ctx, bson.M{"ward": "mallory"}, options.Find().SetProjection(proj))
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	_, err = patients.FindOne(ctx, bson.M{"ward": "mallory"}, options.FindOne().SetProjection(bson.M{"ward": bson.M{"$slice": 1}}))
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	_, err = patients.FindOneAndUpdate(ctx, bson.M{"ward": "mallory"}, bson.M{"$set": bson.M{"ward": "m"}},
		options.FindOneAndUpdate().SetProjection(bson.M{"_id": "$ward"}))
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	// Inclusion and exclusion pass.
	for _, p := range []any{bson.M{"notes": 1, "_id": true}, bson.D{{Key: "ward", Value: 0}, {Key: "birth", Value: false}, {Key: "x", Value: 1.0}}} {
		_, err = patients.Find(ctx, bson.M{"ward": "mallory"}, options.Find().SetProjection(p))
		assert.ErrorIs(t, err, errCaptured, "%v", p)
	}
}

// 2. Blind indexes are not authenticated. With write access, A copies the
// blind index of "mallory@x" into the victim's document; a lookup by
// mallory's email would return the victim's record. Reads now recompute
// the blind index of every decrypted eq field and compare.
func TestEncDefendBlindIndexSwapDetected(t *testing.T) {
	db := srv.Database(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	victim := &Patient{Email: "victim@x", Notes: "victim notes"}
	mallory := &Patient{Email: "mallory@x"}
	require.NoError(t, patients.Insert(ctx, victim))
	require.NoError(t, patients.Insert(ctx, mallory))
	mb := binOf(t, rawByID(t, db, "patients", mallory.ID), "email_bidx")
	c := db.Collection("patients")
	_, err := c.UpdateByID(ctx, victim.ID, bson.M{"$set": bson.M{"email_bidx": mb}})
	require.NoError(t, err)
	_, err = c.DeleteOne(ctx, bson.M{"_id": mallory.ID})
	require.NoError(t, err)

	p, err := patients.FindOne(ctx, bson.M{"email": "mallory@x"})
	requireDecryptError(t, err, victim.ID, "email")
	assert.Nil(t, p)
	var m []bson.M
	err = patients.Aggregate(ctx, bson.A{bson.M{"$match": bson.M{"email": "mallory@x"}}}, &m)
	requireDecryptError(t, err, victim.ID, "email")
	_, err = c.UpdateByID(ctx, victim.ID, bson.M{"$set": bson.M{"email_bidx": "not binary"}})
	require.NoError(t, err)
	_, err = patients.FindByID(ctx, victim.ID)
	requireDecryptError(t, err, victim.ID, "email")
	// Projected out: not checked.
	_, err = patients.FindByID(ctx, victim.ID, options.FindOne().SetProjection(bson.M{"email_bidx": 0}))
	require.NoError(t, err)
}

// 3. MongoDB compares numbers across types: a filter {_id: 5.0} (any
// JSON-decoded filter: Go's encoding/json yields float64) matches the int64
// _id 5. Values used to be bound to double 5.0, making the document
// unreadable; they are now bound only to an _id of the model's type, and
// written unbound otherwise.
func TestEncDefendDoubleIDFilterKeepsDocumentReadable(t *testing.T) {
	db := srv.Database(t)
	r, _ := encrypted[*IntPatient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	require.NoError(t, r.Insert(ctx, &IntPatient{ID: 5, Email: "a@x", Notes: "n"}))

	var filter map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"_id": 5}`), &filter)) // a user's request
	res, err := r.UpdateOne(ctx, filter, bson.M{"$set": bson.M{"notes": "new notes"}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), res.MatchedCount, "the server matches int64 5 with 5.0")
	got, err := r.FindByID(ctx, int64(5))
	require.NoError(t, err)
	assert.Equal(t, "new notes", got.Notes)
	assert.Equal(t, byte(0), payload(t, rawByID(t, db, r.Collection().Name(), int64(5)), "notes")[1], "unbound")

	// An int filter (int32, widened) is of the model's type: bound.
	_, err = r.UpdateOne(ctx, bson.M{"_id": 5}, bson.M{"$set": bson.M{"notes": "int notes"}})
	require.NoError(t, err)
	got, err = r.FindByID(ctx, int64(5))
	require.NoError(t, err)
	assert.Equal(t, "int notes", got.Notes)
	assert.Equal(t, byte(1), payload(t, rawByID(t, db, r.Collection().Name(), int64(5)), "notes")[1], "bound")
}

// 4. An operator document of a map type other than bson.M / map[string]any
// (or a struct, a bson.RawValue, a []bson.E) used to be taken as a
// whole-value equality and hashed: silently empty results. Every document
// shape is now read as operators, and refused as MongoDB would apply them.
func TestEncDefendOperatorMapTypesRefused(t *testing.T) {
	db := srv.Database(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	require.NoError(t, patients.InsertMany(ctx, []*Patient{{Email: "a@x"}, {Email: "b@x"}}))
	for name, filter := range map[string]any{
		"map[string]string $ne":    bson.M{"email": map[string]string{"$ne": "a@x"}},
		"map[string]string $regex": bson.M{"email": map[string]string{"$regex": "^b"}},
		"map[string][]string $nin": bson.M{"email": map[string][]string{"$nin": {"a@x"}}},
		"struct $gt": bson.M{"email": struct {
			Gt string `bson:"$gt"`
		}{"a"}},
		"bson.RawValue of a $ne":    bson.M{"email": rawValueOf(t, bson.M{"$ne": "a@x"})},
		"bson.Raw of a $ne":         bson.M{"email": rawValueOf(t, bson.M{"$ne": "a@x"}).Document()},
		"[]bson.E of a $ne":         bson.M{"email": []bson.E{{Key: "$ne", Value: "a@x"}}},
		"map[string]string in $and": bson.M{"$and": bson.A{bson.M{"email": map[string]string{"$ne": "a@x"}}}},
		"mixed operators and field": bson.M{"email": bson.D{{Key: "$eq", Value: "a@x"}, {Key: "x", Value: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			ps, err := patients.Find(ctx, filter)
			assert.ErrorIs(t, err, encryption.ErrEncryptedField)
			assert.Empty(t, ps)
		})
	}
	// The same shapes with $eq / $in still work.
	for name, filter := range map[string]any{
		"map[string]string $eq":   bson.M{"email": map[string]string{"$eq": "b@x"}},
		"map[string][]string $in": bson.M{"email": map[string][]string{"$in": {"b@x"}}},
		"bson.RawValue $in":       bson.M{"email": rawValueOf(t, bson.M{"$in": bson.A{"b@x"}})},
		"[]bson.E $eq":            bson.M{"email": []bson.E{{Key: "$eq", Value: "b@x"}}},
		"bson.RawValue value":     bson.M{"email": rawValueOf(t, "b@x")},
	} {
		t.Run(name, func(t *testing.T) {
			ps, err := patients.Find(ctx, filter)
			require.NoError(t, err)
			require.Len(t, ps, 1)
			assert.Equal(t, "b@x", ps[0].Email)
		})
	}
}

func rawValueOf(t testing.TB, v any) bson.RawValue {
	raw, err := bson.Marshal(bson.M{"v": v})
	require.NoError(t, err)
	return bson.Raw(raw).Lookup("v")
}

// 5. Encryption is "after every other listener" only among non-policies. A
// policy registered after it (same Order, later registration, or a higher
// Order) runs after it. Encryption's Check, which runs after every
// listener, refuses what such a policy leaves in plaintext or unrewritten.
func TestEncDefendPolicyAfterEncryptionWritesPlaintext(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	var mode string
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		switch e.Type {
		case events.BeforeSave:
			d, err := mql.ToD(e.Document)
			if err != nil {
				return err
			}
			switch mode {
			case "plaintext":
				d = append(d, bson.E{Key: "notes", Value: "PLAINTEXT-from-policy"})
			case "bidx":
				d = append(d, bson.E{Key: "email_bidx", Value: primitive.Binary{Data: bytes.Repeat([]byte{7}, 16)}})
			}
			e.Document, err = bson.Marshal(dedupe(d))
			return err
		case events.BeforeUpdate:
			u, err := mql.ParseUpdate(e.Update)
			if err != nil {
				return err
			}
			switch mode {
			case "plaintext":
				err = u.Add("$set", "email", "PLAINTEXT-update@x")
			case "bidx":
				err = u.Add("$set", "email_bidx", primitive.Binary{Data: bytes.Repeat([]byte{7}, 16)})
			}
			if err != nil {
				return err
			}
			e.Update = u.Value()
		case events.BeforeQuery:
			if mode == "plaintext" && e.Filter != nil {
				e.Filter = mql.And(e.Filter, bson.E{Key: "email", Value: "PLAINTEXT-query@x"})
			}
			if mode == "plaintext" && e.Pipeline != nil {
				st, err := mql.Stages(e.Pipeline)
				if err != nil {
					return err
				}
				e.Pipeline = append(st, bson.D{{Key: "$match", Value: bson.M{"notes": "PLAINTEXT"}}})
			}
		}
		return nil
	}), events.On(events.BeforeSave, events.BeforeUpdate, events.BeforeQuery), events.AsPolicy())
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	p := &Patient{Email: "e@x", Notes: "n"}
	require.NoError(t, patients.Insert(ctx, p), "a later policy that leaves the encryption alone is fine")
	_, err = patients.UpdateOne(ctx, bson.M{"_id": p.ID}, bson.M{"$set": bson.M{"ward": "w", "email": "f@x"}})
	require.NoError(t, err)

	for _, m := range []string{"plaintext", "bidx"} {
		mode = m
		err = patients.Insert(ctx, &Patient{Email: "e2@x", Notes: "n"})
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, m)
		_, err = patients.UpdateOne(ctx, bson.M{"_id": p.ID}, bson.M{"$set": bson.M{"ward": "w2"}})
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, m)
	}
	mode = "plaintext"
	_, err = patients.Find(ctx, bson.M{"ward": "w"})
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	var out []bson.M
	assert.ErrorIs(t, patients.Aggregate(ctx, bson.A{bson.M{"$match": bson.M{"ward": "w"}}}, &out), encryption.ErrEncryptedField)

	mode = ""
	raw := rawByID(t, db, "patients", p.ID)
	assert.Equal(t, encryption.EncryptedSubtype, binOf(t, raw, "notes").Subtype)
	assert.Equal(t, encryption.EncryptedSubtype, binOf(t, raw, "email").Subtype)
	n, err := patients.Count(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "nothing refused was written")
}

func dedupe(d bson.D) bson.D {
	seen := map[string]int{}
	var out bson.D
	for _, e := range d {
		if i, ok := seen[e.Key]; ok {
			out[i] = e
			continue
		}
		seen[e.Key] = len(out)
		out = append(out, e)
	}
	return out
}

// 6. Logging (WithDocuments) runs before Encryption on BeforeQuery and
// used to redact by key only: plaintext compared with an encrypted field
// inside $expr, $where or a pipeline expression was logged. Filters,
// updates and pipelines of a model with encrypted fields are now not
// logged at all; documents keep their encrypted fields redacted, after
// decryption too.
func TestEncDefendLoggingRedactsQueries(t *testing.T) {
	db := srv.Database(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	bus.Register(listeners.NewLogging(logger, listeners.WithDocuments()))
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	_, err = patients.Find(ctx, bson.M{"$expr": bson.M{"$eq": bson.A{"$notes", "SECRET-diagnosis-expr"}}})
	require.ErrorIs(t, err, encryption.ErrEncryptedField)
	_, err = patients.Find(ctx, bson.M{"$where": "this.email == 'SECRET-where@x'"})
	require.ErrorIs(t, err, encryption.ErrEncryptedField)
	var out []bson.M
	err = patients.Aggregate(ctx, bson.A{bson.M{"$project": bson.M{"x": bson.M{"$eq": bson.A{"$email", "SECRET-pipe@x"}}}}}, &out)
	require.ErrorIs(t, err, encryption.ErrEncryptedField)
	p := &Patient{Email: "SECRET-doc@x", Notes: "SECRET-notes", Ward: "w"}
	require.NoError(t, patients.Insert(ctx, p))
	_, err = patients.UpdateMany(ctx, bson.M{"ward": "w"}, bson.M{"$set": bson.M{"notes": "SECRET-update"}})
	require.NoError(t, err)
	_, err = patients.FindOne(ctx, bson.M{"email": "SECRET-doc@x"})
	require.NoError(t, err)
	for _, s := range []string{"SECRET-diagnosis-expr", "SECRET-where@x", "SECRET-pipe@x", "SECRET-doc@x", "SECRET-notes", "SECRET-update"} {
		assert.NotContains(t, buf.String(), s)
	}
	assert.Contains(t, buf.String(), "[redacted: the model has encrypted fields]")
	assert.Contains(t, buf.String(), `\"ward\":\"w\"`, "documents are still logged, encrypted fields redacted")
}

// 7. Pipelines and filters that read an encrypted field by a computed name,
// in JavaScript, in a sortBy, a join or a sub-pipeline's $match: refused
// (on MongoDB they would compute on ciphertexts: silent wrong results).
func TestEncDefendReadsRefused(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	capture(bus, events.BeforeQuery)
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	pipes := map[string]bson.A{
		"$getField shorthand in $expr": {bson.M{"$match": bson.M{"$expr": bson.M{"$eq": bson.A{bson.M{"$getField": "email"}, "a@x"}}}}},
		"$getField in $group":          {bson.M{"$group": bson.M{"_id": bson.M{"$getField": "notes"}, "n": bson.M{"$sum": 1}}}},
		"$setWindowFields sortBy":      {bson.M{"$setWindowFields": bson.M{"sortBy": bson.M{"email": 1}, "output": bson.M{"r": bson.M{"$rank": bson.M{}}}}}},
		"$top sortBy in $group":        {bson.M{"$group": bson.M{"_id": nil, "first": bson.M{"$top": bson.M{"output": "$_id", "sortBy": bson.M{"notes": 1}}}}}},
		"$lookup sub-pipeline $match":  {bson.M{"$lookup": bson.M{"from": "patients", "pipeline": bson.A{bson.M{"$match": bson.M{"email": "a@x"}}}, "as": "j"}}},
		"$unionWith $match":            {bson.M{"$unionWith": bson.M{"coll": "patients", "pipeline": bson.A{bson.M{"$match": bson.M{"notes": bson.M{"$regex": "^a"}}}}}}},
		"$lookup foreignField":         {bson.M{"$lookup": bson.M{"from": "patients", "localField": "ward", "foreignField": "email", "as": "j"}}},
		"$graphLookup restrictSearch":  {bson.M{"$graphLookup": bson.M{"from": "patients", "startWith": "$ward", "connectFromField": "ward", "connectToField": "ward", "as": "j", "restrictSearchWithMatch": bson.M{"email": "a@x"}}}},
		"$graphLookup connectToField":  {bson.M{"$graphLookup": bson.M{"from": "patients", "startWith": "$ward", "connectFromField": "ward", "connectToField": "email", "as": "j"}}},
		"$function":                    {bson.M{"$addFields": bson.M{"x": bson.M{"$function": bson.M{"body": "function(a){return a}", "args": bson.A{"$ward"}, "lang": "js"}}}}},
		"$accumulator":                 {bson.M{"$group": bson.M{"_id": nil, "x": bson.M{"$accumulator": bson.M{"init": "function(){return 0}"}}}}},
		"$facet with $getField":        {bson.M{"$facet": bson.M{"a": bson.A{bson.M{"$project": bson.M{"x": bson.M{"$getField": "ward"}}}}}}},
	}
	for name, p := range pipes {
		t.Run("pipeline "+name, func(t *testing.T) {
			var out []bson.M
			err := patients.Aggregate(ctx, p, &out)
			assert.ErrorIs(t, err, encryption.ErrEncryptedField)
		})
	}
	filters := map[string]any{
		"$jsonSchema required/properties": bson.M{"$jsonSchema": bson.M{"required": bson.A{"notes"}, "properties": bson.M{"notes": bson.M{"bsonType": "string"}}}},
		"$jsonSchema enum":                bson.M{"$jsonSchema": bson.M{"properties": bson.M{"email": bson.M{"enum": bson.A{"a@x"}}}}},
		"$where with concatenated name":   bson.M{"$where": "this['em'+'ail'] == 'a@x'"},
		"$expr $getField":                 bson.M{"$expr": bson.M{"$gt": bson.A{bson.M{"$getField": bson.M{"$literal": "notes"}}, "m"}}},
		"$getField in $or":                bson.M{"$or": bson.A{bson.M{"$expr": bson.M{"$getField": "x"}}}},
	}
	for name, f := range filters {
		t.Run("filter "+name, func(t *testing.T) {
			_, err := patients.Find(ctx, f)
			assert.ErrorIs(t, err, encryption.ErrEncryptedField)
		})
	}
	// What does not touch encrypted fields still passes.
	for name, p := range map[string]bson.A{
		"sortBy ward":          {bson.M{"$setWindowFields": bson.M{"sortBy": bson.M{"ward": 1}, "output": bson.M{"r": bson.M{"$rank": bson.M{}}}}}},
		"$lookup on ward":      {bson.M{"$lookup": bson.M{"from": "patients", "localField": "ward", "foreignField": "ward", "as": "j"}}},
		"sub-pipeline $exists": {bson.M{"$unionWith": bson.M{"coll": "patients", "pipeline": bson.A{bson.M{"$match": bson.M{"ward": "w", "email": bson.M{"$exists": true}}}}}}},
	} {
		var out []bson.M
		assert.ErrorIs(t, patients.Aggregate(ctx, p, &out), errCaptured, name)
	}
}

// 8. fmt with %+v / %v of *Encryption used to print its unexported
// indexKey: the blind-index HMAC key, with which a dump's blind indexes can
// be brute-forced (emails are low-entropy). slog's TextHandler uses %+v.
// *Encryption now prints its key IDs only, and its keys sit behind
// pointers, which fmt does not follow inside other values.
func TestEncDefendFmtOfEncryptionRedacted(t *testing.T) {
	s := secret(t)
	enc, err := encryption.New(encryption.Keys{{ID: "k", Secret: s}, {ID: "old", Secret: secret(t)}})
	require.NoError(t, err)
	idx, err := hkdf.Key(sha256.New, s, []byte("mgmevents field encryption"), "mgmevents/v1 HMAC-SHA-256 blind index", 32)
	require.NoError(t, err)
	aead, err := hkdf.Key(sha256.New, s, []byte("mgmevents field encryption"), "mgmevents/v1 AES-256-GCM field encryption", 32)
	require.NoError(t, err)
	var printed []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q", "%d"} {
		printed = append(printed, fmt.Sprintf(verb, enc),
			fmt.Sprintf(verb, struct{ enc *encryption.Encryption }{enc}),
			fmt.Sprintf(verb, struct{ Enc *encryption.Encryption }{enc}),
			fmt.Sprintf(verb, []any{enc}), fmt.Sprintf(verb, map[string]any{"e": enc}))
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("configured", "enc", enc, "nested", struct{ E *encryption.Encryption }{enc})
	slog.New(slog.NewJSONHandler(&js, nil)).Info("configured", "enc", enc, "nested", struct{ E *encryption.Encryption }{enc})
	printed = append(printed, text.String(), js.String())
	for _, p := range printed {
		for _, k := range [][]byte{idx, aead, s} {
			assert.NotContains(t, p, fmt.Sprint(k))
			assert.NotContains(t, p, fmt.Sprintf("%x", k))
			assert.NotContains(t, p, fmt.Sprintf("%X", k))
			assert.NotContains(t, p, string(k))
		}
		assert.NotContains(t, p, fmt.Sprint(idx[:8]))
	}
	assert.Equal(t, `Encryption{keys: ["k", "old"], secrets: [redacted]}`, enc.String())
	assert.Contains(t, text.String(), `enc="Encryption{keys: [\"k\", \"old\"]`)
}

// 10. A repository of an encrypt-tagged model on a bus without Encryption
// (or with a nil bus) would store plaintext: repo.New refuses it.
func TestEncDefendNoEncryptionOnBusRefused(t *testing.T) {
	db := srv.Database(t)
	_, err := repo.New[*Patient](nil, repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced)
	_, err = repo.New[*Patient](events.NewBus(), repo.WithDatabase(db))
	assert.ErrorIs(t, err, repo.ErrUnenforced)
	assert.ErrorContains(t, err, `"encrypt"`)
}

// 11. One document with a non-ciphertext value, placed first in _id order
// by anyone with write access, used to stop Reencrypt before it rewrote
// anything. It is now skipped, counted and reported; the rest rotates.
func TestEncDefendReencryptSkipsBadDocument(t *testing.T) {
	db := srv.Database(t)
	old := encryption.Key{ID: "old", Secret: secret(t)}
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{old})
	require.NoError(t, patients.InsertMany(ctx, []*Patient{{Email: "a@x"}, {Email: "b@x"}}))
	_, err := db.Collection("patients").InsertOne(ctx, bson.M{"_id": primitive.NilObjectID, "notes": "junk"})
	require.NoError(t, err)
	_, enc := encrypted[*Patient](t, db, encryption.Keys{{ID: "new", Secret: secret(t)}, old})
	var last encryption.ReencryptProgress
	n, err := enc.Reencrypt(ctx, patients.Collection().Collection, patients.Schema().Type,
		encryption.WithReencryptBatch(1), encryption.WithReencryptProgress(func(p encryption.ReencryptProgress) { last = p }))
	require.ErrorIs(t, err, encryption.ErrDecrypt, "reported")
	assert.Contains(t, err.Error(), "1 documents skipped")
	assert.Contains(t, err.Error(), primitive.NilObjectID.Hex())
	assert.Equal(t, int64(2), n, "the others rotated")
	assert.Equal(t, encryption.ReencryptProgress{Scanned: 3, Rewritten: 2, Skipped: 1}, last)
	for _, raw := range rawDocs(t, db, "patients") {
		if raw.Lookup("email").Type != 0 {
			assert.Equal(t, "new", keyID(t, raw, "email"))
		}
	}
}

// 12. Unbound values (UpdateMany, upsert by email) can be copied into the
// same field of any document (documented). Reencrypt used to "launder" the
// copy into a value bound to the new document; it now keeps the binding.
func TestEncDefendReencryptKeepsUnboundFlag(t *testing.T) {
	db := srv.Database(t)
	k := encryption.Key{ID: "k", Secret: secret(t)}
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{k})
	a, b := &Patient{Ward: "a"}, &Patient{Ward: "b", Notes: "b's own"}
	require.NoError(t, patients.InsertMany(ctx, []*Patient{a, b}))
	_, err := patients.UpdateMany(ctx, bson.M{"ward": "a"}, bson.M{"$set": bson.M{"notes": "a's secret"}})
	require.NoError(t, err)
	c := db.Collection("patients")
	_, err = c.UpdateByID(ctx, b.ID, bson.M{"$set": bson.M{"notes": binOf(t, rawByID(t, db, "patients", a.ID), "notes")}})
	require.NoError(t, err)
	_, enc := encrypted[*Patient](t, db, encryption.Keys{{ID: "k2", Secret: secret(t)}, k})
	_, err = enc.Reencrypt(ctx, c, patients.Schema().Type)
	require.NoError(t, err)
	for _, id := range []primitive.ObjectID{a.ID, b.ID} {
		raw := rawByID(t, db, "patients", id)
		assert.Equal(t, "k2", keyID(t, raw, "notes"), "rotated")
		assert.Equal(t, byte(0), payload(t, raw, "notes")[1], "still unbound, not bound to the document it was copied into")
	}
}

// 13. $set of a path under the blind-index field is refused: a user could
// plant a bogus email_bidx document in documents without an email.
func TestEncDefendSetUnderBlindIndexPath(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	capture(bus, events.BeforeUpdate)
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	for _, u := range []bson.M{{"$set": bson.M{"email_bidx.x": 1}}, {"$unset": bson.M{"email_bidx.x": ""}}, {"$inc": bson.M{"email_bidx.0": 1}}} {
		_, err = patients.UpdateOne(ctx, bson.M{"ward": "w"}, u)
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, "%v", u)
	}
	_, err = patients.UpdateOne(ctx, bson.M{"ward": "w"}, bson.M{"$set": bson.M{"email_bidxy": 1}})
	assert.ErrorIs(t, err, errCaptured, "another field that only starts with the name")
}

// Held: tampering with the stored format.
func TestEncHeldTamperedPayloads(t *testing.T) {
	db := srv.Database(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}, {ID: "k2", Secret: secret(t)}})
	p := &Patient{Email: "a@x", Notes: "n"}
	q := &Patient{Email: "b@x", Notes: "m"}
	require.NoError(t, patients.InsertMany(ctx, []*Patient{p, q}))
	c := db.Collection("patients")
	orig := payload(t, rawByID(t, db, "patients", p.ID), "notes")
	other := payload(t, rawByID(t, db, "patients", q.ID), "notes")
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), orig...)) }
	cases := map[string][]byte{
		"flag bound→unbound":   mut(func(b []byte) []byte { b[1] = 0; return b }),
		"unknown flag":         mut(func(b []byte) []byte { b[1] = 3; return b }),
		"key id k→ other ring": append([]byte{1, 1, 2, 'k', '2'}, orig[4:]...),
		"type string→binary":   mut(func(b []byte) []byte { b[4] = 5; return b }),
		"version 2":            mut(func(b []byte) []byte { b[0] = 2; return b }),
		"truncated":            orig[:20],
		"n=255 short":          {1, 1, 255, 'k'},
		"empty":                {},
		"other doc's value":    other,
		"nonce flip":           mut(func(b []byte) []byte { b[6] ^= 1; return b }),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.UpdateByID(ctx, p.ID, bson.M{"$set": bson.M{"notes": primitive.Binary{Subtype: encryption.EncryptedSubtype, Data: data}}})
			require.NoError(t, err)
			_, err = patients.FindByID(ctx, p.ID)
			requireDecryptError(t, err, p.ID, "notes")
		})
	}
	// The email's ciphertext in the notes field, same document.
	_, err := c.UpdateByID(ctx, p.ID, bson.M{"$set": bson.M{"notes": binOf(t, rawByID(t, db, "patients", p.ID), "email")}})
	require.NoError(t, err)
	_, err = patients.FindByID(ctx, p.ID)
	requireDecryptError(t, err, p.ID, "notes")
}

// Held: $inc/$push/$rename, sort, Distinct and bidx writes are refused;
// secrets are not in ErrKey errors.
func TestEncHeldRefusals(t *testing.T) {
	db := srv.Database(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k", Secret: secret(t)}})
	for name, u := range map[string]any{
		"$inc": bson.M{"$inc": bson.M{"notes": 1}}, "$push": bson.M{"$push": bson.M{"notes": 1}},
		"$rename from": bson.M{"$rename": bson.M{"notes": "x"}}, "$rename to": bson.M{"$rename": bson.M{"ward": "email"}},
		"$set bidx": bson.M{"$set": bson.M{"email_bidx": primitive.Binary{}}}, "$unset bidx": bson.M{"$unset": bson.M{"email_bidx": ""}},
		"$set sub": bson.M{"$set": bson.M{"birth.x": 1}}, "pipeline": bson.A{bson.M{"$set": bson.M{"x": "$notes"}}},
		"pipeline replaceWith": bson.A{bson.M{"$replaceWith": bson.M{"a": 1}}},
	} {
		_, err := patients.UpdateMany(ctx, bson.M{}, u)
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, name)
	}
	_, err := patients.Distinct(ctx, "notes", bson.D{})
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	_, err = patients.Find(ctx, bson.D{}, options.Find().SetSort(bson.M{"email": 1}))
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	for _, f := range []any{bson.M{"notes": "x"}, bson.M{"email": bson.M{"$ne": "x"}}, bson.M{"email": primitive.Regex{Pattern: "a"}},
		bson.M{"birth.year": 1}, bson.M{"$or": bson.A{bson.M{"email": bson.M{"$gt": "a"}}}}} {
		_, err = patients.Find(ctx, f)
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, "%v", f)
	}
	short := []byte("0123456789abcdef0123456789abcde") // 31 bytes
	_, err = encryption.New(encryption.Keys{{ID: "k", Secret: short}})
	require.ErrorIs(t, err, encryption.ErrKey)
	assert.NotContains(t, err.Error(), string(short))
	_, err = encryption.New(encryption.Keys{{ID: "k", Secret: secret(t)}, {ID: "k", Secret: secret(t)}})
	assert.ErrorIs(t, err, encryption.ErrKey)
}

// 1c. The oracle of 1 across tenants: Tenancy pins the pipeline to A's
// tenant, the planted _id and ciphertext come from another tenant's dump.
// The result is not decrypted.
func TestEncDefendAggregateOracleAcrossTenants(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	bus.Register(tenancy.New())
	r, err := repo.New[*TPatient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	asVictim, asMallory := tenancy.WithTenant(ctx, "victim-org"), tenancy.WithTenant(ctx, "mallory-org")
	v := &TPatient{ID: primitive.NewObjectID(), Notes: "victim org's secret"}
	require.NoError(t, r.Insert(asVictim, v))
	require.NoError(t, r.Insert(asMallory, &TPatient{ID: primitive.NewObjectID(), Notes: "mine"}))
	dump := rawByID(t, db, r.Collection().Name(), v.ID)
	var out []*TPatient
	err = r.Aggregate(asMallory, bson.A{bson.M{"$set": bson.M{"_id": v.ID, "notes": binOf(t, dump, "notes")}}}, &out)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "victim org's secret")
	var m []bson.M
	require.NoError(t, r.Aggregate(asMallory, bson.A{bson.M{"$set": bson.M{"_id": v.ID, "notes": binOf(t, dump, "notes")}}}, &m))
	require.Len(t, m, 1)
	assert.IsType(t, primitive.Binary{}, m[0]["notes"])
}

// 14. Aggregate with $merge/$out would write whatever the pipeline
// computes, plaintext set by a $set stage or another document's
// ciphertext, into encrypted fields of stored documents: refused.
func TestEncDefendAggregateMergeRefused(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	capture(bus, events.BeforeQuery)
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	for _, last := range []bson.M{
		{"$merge": bson.M{"into": "patients", "on": "_id", "whenMatched": "merge"}},
		{"$merge": "other"},
		{"$out": "patients"},
	} {
		var out []bson.M
		err = patients.Aggregate(ctx, bson.A{bson.M{"$set": bson.M{"notes": "PLAINTEXT-via-merge"}}, last}, &out)
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, "%v", last)
		err = patients.Aggregate(ctx, bson.A{bson.M{"$match": bson.M{"ward": "w"}}, last}, &out)
		assert.ErrorIs(t, err, encryption.ErrEncryptedField, "%v", last)
	}
}

// 15. Under a case-insensitive collation MongoDB would match "A@X" to
// "a@x"; the blind-index lookup would silently miss it. A non-simple
// collation on a query that compares an encrypted field is refused.
func TestEncDefendCollationRefused(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	capture(bus, events.BeforeQuery)
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	ci := &options.Collation{Locale: "en", Strength: 2}
	_, err = patients.Find(ctx, bson.M{"email": "A@X"}, options.Find().SetCollation(ci))
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	var out []bson.M
	err = patients.Aggregate(ctx, bson.A{bson.M{"$match": bson.M{"email": "A@X"}}}, &out, options.Aggregate().SetCollation(ci))
	assert.ErrorIs(t, err, encryption.ErrEncryptedField)
	// Queries not on an encrypted field, and the simple collation, pass.
	_, err = patients.Find(ctx, bson.M{"ward": "W"}, options.Find().SetCollation(ci))
	assert.ErrorIs(t, err, errCaptured)
	_, err = patients.Find(ctx, bson.M{"email": "a@x"}, options.Find().SetCollation(&options.Collation{Locale: "simple"}))
	assert.ErrorIs(t, err, errCaptured)
}
