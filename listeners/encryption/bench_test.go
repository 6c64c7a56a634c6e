package encryption_test

import (
	"strconv"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// The encrypt_insert_ratio and encrypt_find_ratio: a model with two
// encrypted fields against the same model unencrypted, each on a bus with
// the Encryption policy registered (so the plain model pays the policy's
// per-type check only). Compare ns/op and allocs/op of each pair:
//
//	go test -run '^$' -bench 'Encrypt|Plain' -benchmem ./listeners/

// Sealed has two encrypted fields, one searchable.
type Sealed struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,eq"`
	Notes            string `bson:"notes" policy:"encrypt"`
	Ward             string `bson:"ward"`
}

// Unsealed is Sealed without encryption.
type Unsealed struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email"`
	Notes            string `bson:"notes"`
	Ward             string `bson:"ward"`
}

func benchRepo[T mgm.Model](b *testing.B) *repo.Repository[T] {
	db := srv.Database(b)
	bus, _ := encBus(b, encryption.Keys{{ID: "k", Secret: secret(b)}})
	r, err := repo.New[T](bus, repo.WithDatabase(db))
	require.NoError(b, err)
	return r
}

// benchInsert inserts one model per iteration.
func benchInsert[T mgm.Model](b *testing.B, mk func(email, notes string) T) {
	r := benchRepo[T](b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := r.Insert(ctx, mk("user"+strconv.Itoa(i)+"@example.com", "notes about the patient")); err != nil {
			b.Fatal(err)
		}
	}
}

// benchFind finds one of 200 models by email per iteration.
func benchFind[T mgm.Model](b *testing.B, mk func(email, notes string) T) {
	r := benchRepo[T](b)
	for i := range 200 {
		require.NoError(b, r.Insert(ctx, mk("user"+strconv.Itoa(i)+"@example.com", "notes")))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := r.FindOne(ctx, bson.M{"email": "user" + strconv.Itoa(i%200) + "@example.com"}); err != nil {
			b.Fatal(err)
		}
	}
}

func sealed(email, notes string) *Sealed     { return &Sealed{Email: email, Notes: notes, Ward: "w"} }
func unsealed(email, notes string) *Unsealed { return &Unsealed{Email: email, Notes: notes, Ward: "w"} }
func BenchmarkEncryptInsert(b *testing.B)    { benchInsert(b, sealed) }
func BenchmarkPlainInsert(b *testing.B)      { benchInsert(b, unsealed) }
func BenchmarkEncryptFind(b *testing.B)      { benchFind(b, sealed) }
func BenchmarkPlainFind(b *testing.B)        { benchFind(b, unsealed) }
