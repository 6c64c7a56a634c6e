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
	Email            string `bson:"email" encrypt:"eq"`
	Phone            string `bson:"phone" encrypt:""`
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

	enc, err := encryption.New(keys, encryption.WithIndexesIn(db))
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
