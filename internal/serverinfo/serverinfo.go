// Package serverinfo asks a server, once per client, what it can be
// trusted with.
package serverinfo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

var atomicCache clientCache[bool]

// AtomicWrites reports whether the server applies a filtered write (a
// findAndModify, or an update filtered on a version) atomically across
// connections. MongoDB does; FerretDB 1.x, recognised by the
// ferretdbVersion field of buildInfo, does not. The answer is cached per
// client.
func AtomicWrites(ctx context.Context, db *mongo.Database) (bool, error) {
	if v, ok := atomicCache.load(db.Client()); ok {
		return v, nil
	}
	var info bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return false, fmt.Errorf("asking the server with buildInfo: %w", err)
	}
	_, ferret := info["ferretdbVersion"]
	atomicCache.store(db.Client(), !ferret)
	return !ferret, nil
}
