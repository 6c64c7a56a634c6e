package outbox

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Sources is the collection, in each database, that names the collections
// whose documents may hold events: the outbox adds a collection before its
// first write of events or of a tombstone there, and a Relay without
// WithCollections serves those it names.
const Sources = "outbox_sources"

type sourceKey struct {
	client *mongo.Client
	db     string
	coll   string
}

// register adds e's collection to Sources, once per process.
func (o *Outbox) register(ctx context.Context, e *events.Event) error {
	if e.Coll == nil {
		return fmt.Errorf("outbox: the %v event carries no collection", e.Type)
	}
	db := e.Coll.Database()
	key := sourceKey{db.Client(), db.Name(), e.Coll.Name()}
	if _, ok := o.sources.Load(key); ok {
		return nil
	}
	_, err := db.Collection(Sources).UpdateOne(ctx, bson.D{{Key: "_id", Value: key.coll}},
		bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "_id", Value: key.coll}}}}, options.Update().SetUpsert(true))
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("outbox: registering %s in %s: %w", key.coll, Sources, err)
	}
	o.sources.Store(key, struct{}{})
	return nil
}
