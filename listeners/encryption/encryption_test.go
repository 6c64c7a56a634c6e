package encryption_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// Patient is the model, plus a plain field to filter on.
type Patient struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string    `bson:"email" policy:"encrypt,eq"`
	Notes            string    `bson:"notes" policy:"encrypt"`
	Birth            time.Time `bson:"birth" policy:"encrypt"`
	Ward             string    `bson:"ward"`
}

// Address is a sub-document, encrypted whole.
type Address struct {
	Street string `bson:"street"`
	Zip    int    `bson:"zip"`
}

// Chart round-trips one encrypted field of each kind.
type Chart struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string    `bson:"name" policy:"encrypt"`
	Score            int64     `bson:"score" policy:"encrypt,eq"`
	Seen             time.Time `bson:"seen" policy:"encrypt"`
	Home             Address   `bson:"home" policy:"encrypt"`
	Tags             []string  `bson:"tags" policy:"encrypt"`
	Nick             *string   `bson:"nick" policy:"encrypt,eq"`
}

func secret(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// encrypted returns a repository of T whose bus has Encryption over keys,
// on db, and the encryption.
func encrypted[T mgm.Model](t testing.TB, db *mongo.Database, keys encryption.Keys, opts ...encryption.Option) (*repo.Repository[T], *encryption.Encryption) {
	t.Helper()
	bus, enc := encBus(t, keys, opts...)
	r, err := repo.New[T](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	return r, enc
}

// encBus returns a bus with Encryption over keys registered.
func encBus(t testing.TB, keys encryption.Keys, opts ...encryption.Option) (*events.Bus, *encryption.Encryption) {
	t.Helper()
	enc, err := encryption.New(keys, opts...)
	require.NoError(t, err)
	bus := events.NewBus()
	bus.Register(enc)
	return bus, enc
}

// requireDecryptError checks that err is a DecryptError naming the _id
// and the field.
func requireDecryptError(t *testing.T, err error, id primitive.ObjectID, field string) {
	t.Helper()
	require.ErrorIs(t, err, encryption.ErrDecrypt)
	var de *encryption.DecryptError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, field, de.Field)
	assert.Contains(t, de.ID, id.Hex())
	assert.Contains(t, err.Error(), id.Hex())
	assert.Contains(t, err.Error(), `"`+field+`"`)
}

func rawDocs(t testing.TB, db *mongo.Database, coll string) []bson.Raw {
	t.Helper()
	cur, err := db.Collection(coll).Find(ctx, bson.D{})
	require.NoError(t, err)
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, append(bson.Raw(nil), cur.Current...))
	}
	require.NoError(t, cur.Err())
	return out
}

// payload returns the stored ciphertext of field in raw, failing unless it
// is one.
func payload(t testing.TB, raw bson.Raw, field string) []byte {
	t.Helper()
	sub, data, ok := raw.Lookup(field).BinaryOK()
	require.True(t, ok, "%s is stored as binary", field)
	require.Equal(t, encryption.EncryptedSubtype, sub)
	return data
}

// keyID reads the key ID from a stored ciphertext, per the documented
// format.
func keyID(t testing.TB, raw bson.Raw, field string) string {
	p := payload(t, raw, field)
	return string(p[3 : 3+int(p[2])])
}

func TestEncryptionRoundTrip(t *testing.T) {
	db := srv.Database(t)
	charts, _ := encrypted[*Chart](t, db, encryption.Keys{{ID: "k1", Secret: secret(t)}})
	nick := "bo"
	seen := time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC)
	in := &Chart{Name: "Bo Smith", Score: 1 << 40, Seen: seen, Home: Address{Street: "Elm St 5", Zip: 1234},
		Tags: []string{"allergy", "diabetes"}, Nick: &nick}
	require.NoError(t, charts.Insert(ctx, in))
	empty := &Chart{Name: "no nick"}
	require.NoError(t, charts.Insert(ctx, empty))

	got, err := charts.FindByID(ctx, in.ID)
	require.NoError(t, err)
	assert.Equal(t, in.Name, got.Name)
	assert.Equal(t, in.Score, got.Score)
	assert.Equal(t, seen, got.Seen.UTC())
	assert.Equal(t, in.Home, got.Home)
	assert.Equal(t, in.Tags, got.Tags)
	require.NotNil(t, got.Nick)
	assert.Equal(t, "bo", *got.Nick)
	got, err = charts.FindByID(ctx, empty.ID)
	require.NoError(t, err)
	assert.Nil(t, got.Nick, "null round-trips as null")

	raw := rawDocs(t, db, "charts")
	require.Len(t, raw, 2)
	for _, f := range []string{"name", "score", "seen", "home", "tags", "nick"} {
		p := payload(t, raw[0], f)
		assert.Equal(t, byte(1), p[0], "format version")
		assert.Equal(t, byte(1), p[1], "bound to the _id")
	}
	for _, plain := range []string{"Bo Smith", "Elm St 5", "allergy", "diabetes"} {
		assert.False(t, bytes.Contains(raw[0], []byte(plain)), plain)
	}

	// Numbers: an int (int32 in BSON) finds an int64 field of the same value.
	found, err := charts.Find(ctx, bson.M{"score": int(1 << 40)})
	require.NoError(t, err)
	assert.Len(t, found, 1)
	found, err = charts.Find(ctx, bson.M{"nick": nil})
	require.NoError(t, err)
	require.Len(t, found, 1, "null equality finds the nil pointer")
	assert.Equal(t, empty.ID, found[0].ID)
}

func TestEncryptionDetectsChangedCiphertext(t *testing.T) {
	db := srv.Database(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k1", Secret: secret(t)}})
	p := &Patient{Email: "ann@example.com", Notes: "asthma"}
	require.NoError(t, patients.Insert(ctx, p))
	raw := rawDocs(t, db, "patients")[0]
	coll := db.Collection("patients")

	for _, tc := range []struct {
		name string
		at   func(p []byte) int
	}{
		{"last byte of the tag", func(p []byte) int { return len(p) - 1 }},
		{"a byte of the ciphertext", func(p []byte) int { return len(p) - 17 }},
		{"the flags: bound passed off as unbound", func([]byte) int { return 1 }},
		{"the stored BSON type", func(p []byte) int { return 3 + int(p[2]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(payload(t, raw, "email"))
			data[tc.at(data)] ^= 0x01
			_, err := coll.UpdateByID(ctx, p.ID, bson.M{"$set": bson.M{"email": primitive.Binary{Subtype: encryption.EncryptedSubtype, Data: data}}})
			require.NoError(t, err)
			_, err = patients.FindByID(ctx, p.ID)
			requireDecryptError(t, err, p.ID, "email")
		})
	}

	_, err := coll.UpdateByID(ctx, p.ID, bson.M{"$set": bson.M{"email": "ann@example.com"}})
	require.NoError(t, err)
	_, err = patients.FindByID(ctx, p.ID)
	require.ErrorIs(t, err, encryption.ErrDecrypt, "plaintext written around the encryption is refused")
	assert.Contains(t, err.Error(), "plaintext")
}

func TestEncryptionDetectsMovedCiphertext(t *testing.T) {
	db := srv.Database(t)
	keys := encryption.Keys{{ID: "k1", Secret: secret(t)}}
	patients, _ := encrypted[*Patient](t, db, keys)
	a := &Patient{Email: "a@example.com", Notes: "a's notes"}
	b := &Patient{Email: "b@example.com", Notes: "b's notes"}
	require.NoError(t, patients.InsertMany(ctx, []*Patient{a, b}))
	coll := db.Collection("patients")
	rawA, err := coll.FindOne(ctx, bson.M{"_id": a.ID}).Raw()
	require.NoError(t, err)

	// A's email into B's document: another _id.
	_, err = coll.UpdateByID(ctx, b.ID, bson.M{"$set": bson.M{"email": rawA.Lookup("email")}})
	require.NoError(t, err)
	_, err = patients.FindByID(ctx, b.ID)
	requireDecryptError(t, err, b.ID, "email")

	// A's email into A's notes: another field.
	_, err = coll.UpdateByID(ctx, a.ID, bson.M{"$set": bson.M{"notes": rawA.Lookup("email")}})
	require.NoError(t, err)
	_, err = patients.FindByID(ctx, a.ID)
	requireDecryptError(t, err, a.ID, "notes")

	// A's email into another collection, same _id and field.
	other := db.Collection("patients_copy")
	_, err = other.InsertOne(ctx, rawA)
	require.NoError(t, err)
	copied, _ := encrypted[*PatientCopy](t, db, keys)
	_, err = copied.FindByID(ctx, a.ID)
	requireDecryptError(t, err, a.ID, "email")
}

// PatientCopy is Patient in another collection.
type PatientCopy struct {
	Patient `bson:",inline"`
}

func (*PatientCopy) CollectionName() string { return "patients_copy" }

func TestEncryptionWrongOrMissingKey(t *testing.T) {
	db := srv.Database(t)
	k1 := encryption.Key{ID: "k1", Secret: secret(t)}
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{k1})
	p := &Patient{Email: "x@example.com"}
	require.NoError(t, patients.Insert(ctx, p))

	wrong, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k1", Secret: secret(t)}})
	_, err := wrong.FindByID(ctx, p.ID)
	require.ErrorIs(t, err, encryption.ErrDecrypt)
	assert.Contains(t, err.Error(), "authentication failed")
	assert.Contains(t, err.Error(), `key "k1"`)

	missing, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "k2", Secret: secret(t)}})
	_, err = missing.FindByID(ctx, p.ID)
	require.ErrorIs(t, err, encryption.ErrDecrypt)
	assert.Contains(t, err.Error(), `key "k1"`)
	assert.Contains(t, err.Error(), "not in the key ring")
}

func TestEncryptionKeyChecks(t *testing.T) {
	s := secret(t)
	short := s[:31]
	for _, tc := range []struct {
		name string
		keys encryption.Keys
		opts []encryption.Option
	}{
		{"no keys", nil, nil},
		{"short secret", encryption.Keys{{ID: "k", Secret: short}}, nil},
		{"empty ID", encryption.Keys{{Secret: s}}, nil},
		{"duplicate ID", encryption.Keys{{ID: "k", Secret: s}, {ID: "k", Secret: secret(t)}}, nil},
		{"short index key", encryption.Keys{{ID: "k", Secret: s}}, []encryption.Option{encryption.WithIndexKey(encryption.Key{ID: "i", Secret: short})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := encryption.New(tc.keys, tc.opts...)
			require.ErrorIs(t, err, encryption.ErrKey)
			assert.True(t, strings.HasPrefix(err.Error(), "encryption: "), "names its package: %v", err)
			assertNoSecret(t, err.Error(), s)
		})
	}
	_, err := encryption.ParseKeys("k1:" + base64.StdEncoding.EncodeToString(s) + ",k2:%%%" + hex.EncodeToString(s))
	require.ErrorIs(t, err, encryption.ErrKey)
	assertNoSecret(t, err.Error(), s)
	keys, err := encryption.ParseKeys(" k1:" + base64.StdEncoding.EncodeToString(s) + " , k0:" + base64.StdEncoding.EncodeToString(secret(t)))
	require.NoError(t, err)
	require.Len(t, keys, 2)
	assert.Equal(t, "k1", keys[0].ID)
	assert.Equal(t, s, keys[0].Secret)
}

func TestEncryptionKeysPrintRedacted(t *testing.T) {
	s := secret(t)
	keys := encryption.Keys{{ID: "2026-11", Secret: s}}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%d", "%q"} {
		fmt.Fprintf(&out, verb+"\n", keys)
		fmt.Fprintf(&out, verb+"\n", keys[0])
	}
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	logger.Info("keys", "keys", keys, "key", keys[0])
	slog.New(slog.NewTextHandler(&out, nil)).Info("keys", "keys", keys, "key", keys[0])
	j, err := json.Marshal(struct{ K encryption.Keys }{keys})
	require.NoError(t, err)
	out.Write(j)
	assertNoSecret(t, out.String(), s)
	assert.Contains(t, out.String(), "2026-11")
}

// assertNoSecret fails if text holds s raw, in hex, in base64 or as
// decimal bytes.
func assertNoSecret(t *testing.T, text string, s []byte) {
	t.Helper()
	for _, form := range []string{string(s), hex.EncodeToString(s), fmt.Sprintf("%X", s), base64.StdEncoding.EncodeToString(s),
		fmt.Sprint(s[:4])[1:9]} {
		assert.NotContains(t, text, form)
	}
}

type encryptedID struct {
	ID   string `bson:"_id" policy:"encrypt"`
	Name string `bson:"name"`
}

func (m *encryptedID) PrepareID(id any) (any, error) { return id, nil }
func (m *encryptedID) GetID() any                    { return m.ID }
func (m *encryptedID) SetID(id any)                  { m.ID, _ = id.(string) }

type encryptedAuto struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64 `bson:"no" auto:"inc" policy:"encrypt"`
}

type encryptedAudit struct {
	mgm.DefaultModel `bson:",inline"`
	By               string `bson:"by" audit:"createdBy" policy:"encrypt"`
}

type encryptedTenant struct {
	mgm.DefaultModel `bson:",inline"`
	//lint:ignore SA5008 a field of two policies is the mistake under test
	Tenant string `bson:"tenant" policy:"tenant" policy:"encrypt"`
}

type encryptedIndexed struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,eq" index:""`
}

type blindIndexDeclared struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,eq"`
}

func (*blindIndexDeclared) Indexes() []mongo.IndexModel {
	return []mongo.IndexModel{{Keys: bson.D{{Key: "email_bidx", Value: 1}}}}
}

type scopedByEncrypted struct {
	mgm.DefaultModel `bson:",inline"`
	P                string `bson:"p" policy:"encrypt"`
	F                int64  `bson:"f" auto:"inc,scope=p"`
}

type encryptedSliceEq struct {
	mgm.DefaultModel `bson:",inline"`
	Tags             []string `bson:"tags" policy:"encrypt,eq"`
}

type encryptedTaken struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,eq"`
	Other            string `bson:"email_bidx"`
}

type encryptedBadTag struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,deterministic"`
}

type encryptedUnexported struct {
	mgm.DefaultModel `bson:",inline"`
	email            string `policy:"encrypt"`
}

func TestEncryptionRegistrationRefusals(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	_ = encryptedUnexported{}.email
	for name, f := range map[string]func() error{
		"_id":        func() error { _, err := repo.New[*encryptedID](bus, repo.WithDatabase(db)); return err },
		"auto":       func() error { _, err := repo.New[*encryptedAuto](bus, repo.WithDatabase(db)); return err },
		"audit":      func() error { _, err := repo.New[*encryptedAudit](bus, repo.WithDatabase(db)); return err },
		"eq slice":   func() error { _, err := repo.New[*encryptedSliceEq](bus, repo.WithDatabase(db)); return err },
		"index name": func() error { _, err := repo.New[*encryptedTaken](bus, repo.WithDatabase(db)); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := f()
			require.ErrorIs(t, err, encryption.ErrEncryptedField)
		})
	}
	_, err := repo.New[*encryptedBadTag](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, "encryptedBadTag field Email `policy:\"encrypt,deterministic\"`: unknown option \"deterministic\"")
	_, err = repo.New[*encryptedTenant](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag, "a field belongs to one policy")
	assert.ErrorContains(t, err, "field Tenant")
	_, err = repo.New[*encryptedIndexed](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidIndex)
	assert.ErrorContains(t, err, "encryptedIndexed: index email_1 {email: 1} (declared by field Email `index:\"\"`): field Email is encrypted, so an index on it orders ciphertext")
	_, err = repo.New[*blindIndexDeclared](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidIndex)
	assert.ErrorContains(t, err, "blindIndexDeclared.Indexes()[0]): the encryption listener makes the index on email_bidx itself")
	_, err = repo.New[*scopedByEncrypted](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	assert.ErrorContains(t, err, "scopedByEncrypted field F `auto:\"inc,scope=p\"`: scope=p: field P is encrypted")
	_, err = repo.New[*encryptedUnexported](bus, repo.WithDatabase(db))
	require.ErrorIs(t, err, model.ErrInvalidTag)
	_, err = repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
}

// TestEncryptionCannotBeSwitchedOff: with events off for the repository or
// the call, values are still encrypted and decrypted, and queries still
// rewritten.
func TestEncryptionCannotBeSwitchedOff(t *testing.T) {
	db := srv.Database(t)
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	quiet, err := repo.New[*Patient](bus, repo.WithDatabase(db), repo.WithoutEvents())
	require.NoError(t, err)
	loud, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, quiet.Insert(ctx, &Patient{Email: "quiet@example.com"}))
	require.NoError(t, loud.Insert(events.WithoutEvents(ctx), &Patient{Email: "offctx@example.com"}))
	for _, raw := range rawDocs(t, db, "patients") {
		payload(t, raw, "email")
		assert.False(t, bytes.Contains(raw, []byte("@example.com")))
	}
	got, err := quiet.FindOne(ctx, bson.M{"email": "offctx@example.com"})
	require.NoError(t, err)
	assert.Equal(t, "offctx@example.com", got.Email)
	got, err = loud.FindOne(events.WithoutEvents(ctx), bson.M{"email": "quiet@example.com"})
	require.NoError(t, err)
	assert.Equal(t, "quiet@example.com", got.Email)
	_, err = quiet.Find(ctx, bson.M{"notes": "x"})
	require.ErrorIs(t, err, encryption.ErrEncryptedField)
}
