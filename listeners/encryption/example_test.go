package encryption_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

type Client struct {
	mgm.DefaultModel `bson:",inline"`
	Email            string `bson:"email" policy:"encrypt,eq"`
	Phone            string `bson:"phone" policy:"encrypt"`
}

func ExampleNew() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()

	// In an application the keys come from outside the code:
	//	keys, err := encryption.ParseKeys(os.Getenv("MGMEVENTS_KEYS"))
	secret := make([]byte, 32)
	rand.Read(secret)
	keys := encryption.Keys{{ID: "2026-11", Secret: secret}}

	enc, err := encryption.New(keys)
	if err != nil {
		panic(err)
	}
	bus := events.NewBus()
	bus.Register(enc)
	clients, err := repo.New[*Client](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := clients.Insert(ctx, &Client{Email: "ann@example.com", Phone: "555-0100"}); err != nil {
		panic(err)
	}

	found, err := clients.FindOne(ctx, bson.M{"email": "ann@example.com"})
	if err != nil {
		panic(err)
	}
	fmt.Println("found:", found.Email, found.Phone)

	raw, _ := db.Collection("clients").FindOne(ctx, bson.M{}).Raw()
	sub, _ := raw.Lookup("phone").Binary()
	fmt.Printf("stored: binary subtype %#x\n", sub)

	_, err = clients.Find(ctx, bson.M{"phone": "555-0100"})
	fmt.Println("query on phone refused:", errors.Is(err, encryption.ErrEncryptedField))
	fmt.Println(keys)
	// Output:
	// found: ann@example.com 555-0100
	// stored: binary subtype 0x8e
	// query on phone refused: true
	// Keys[Key{ID: "2026-11", Secret: [32 bytes redacted]}]
}

func exampleDB(ctx context.Context) (*mongo.Database, func()) {
	db, done, err := mongotest.Database(ctx, "example")
	if err != nil {
		panic(err)
	}
	return db, done
}

// Rotation: put a new key first in the ring, re-encrypt, then drop the old
// key, keeping it as the blind-index key.
func ExampleEncryption_Reencrypt() {
	ctx := context.Background()
	db, done := exampleDB(ctx)
	defer done()
	newKey := func(id string) encryption.Key {
		secret := make([]byte, encryption.MinSecretLen)
		rand.Read(secret)
		return encryption.Key{ID: id, Secret: secret}
	}
	jan, nov := newKey("2026-01"), newKey("2026-11")

	// clientsWith returns a repository whose bus encrypts with ring.
	clientsWith := func(ring encryption.Keys, opts ...encryption.Option) (*repo.Repository[*Client], *encryption.Encryption) {
		enc, err := encryption.New(ring, opts...)
		if err != nil {
			panic(err)
		}
		bus := events.NewBus()
		bus.Register(enc)
		clients, err := repo.New[*Client](bus, repo.WithDatabase(db))
		if err != nil {
			panic(err)
		}
		return clients, enc
	}
	keyIDs := func() map[string]int {
		ids := map[string]int{}
		cur, _ := db.Collection("clients").Find(ctx, bson.M{})
		for cur.Next(ctx) {
			_, b := cur.Current.Lookup("email").Binary()
			ids[string(b[3:3+b[2]])]++ // the key ID, as the format stores it
		}
		return ids
	}

	old, _ := clientsWith(encryption.Keys{jan})
	for _, e := range []string{"ann@example.com", "bob@example.com"} {
		if err := old.Insert(ctx, &Client{Email: e, Phone: "555-0100"}); err != nil {
			panic(err)
		}
	}

	// 1. The new key first: it encrypts new writes; both keys decrypt.
	clients, enc := clientsWith(encryption.Keys{nov, jan})
	// 2. Rewrite what the old key encrypted.
	n, err := enc.Reencrypt(ctx, db.Collection("clients"), clients.Schema().Type)
	if err != nil {
		panic(err)
	}
	fmt.Println("rewritten:", n, keyIDs())
	// 3. Drop the old key; it made the blind indexes, so it stays the index key.
	clients, _ = clientsWith(encryption.Keys{nov}, encryption.WithIndexKey(jan))
	c, err := clients.FindOne(ctx, bson.M{"email": "bob@example.com"})
	if err != nil {
		panic(err)
	}
	fmt.Println("found:", c.Email)
	// Output:
	// rewritten: 2 map[2026-11:2]
	// found: bob@example.com
}
