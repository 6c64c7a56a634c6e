package autokeys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// A key is unique because a unique index says so: the counter alone
// cannot stop a duplicate that the data already holds, or that another
// writer stores. So a field whose index cannot be built is refused, and
// WithoutIndexes, the only way out, is said aloud at Prepare.

// ErrNoUniqueIndex is wrapped by the error of a Prepare (and so of
// repo.New) that cannot build the unique index of a key field, for
// instance because the collection already holds a duplicate of it.
var ErrNoUniqueIndex = errors.New("autokeys: the unique index of a key field cannot be built")

// indexKeys returns the keys of f's unique index: the field, after the
// fields that scope its numbers.
func indexKeys(f *fieldPlan) bson.D {
	var keys bson.D
	for _, s := range f.Scope { // unique within each value of the scope fields
		keys = append(keys, bson.E{Key: s.BSON, Value: 1})
	}
	return append(keys, bson.E{Key: f.BSON, Value: 1})
}

// indexName returns the name the server gives an index of keys.
func indexName(keys bson.D) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s_%v", k.Key, k.Value)
	}
	return strings.Join(parts, "_")
}

// uniqueIndex makes f's unique index in coll, or returns an error naming
// the model, the field, the collection, the index and the cause. _id needs
// none: the server keeps it unique.
func uniqueIndex(ctx context.Context, p *plan, coll *mongo.Collection, f *fieldPlan) error {
	keys := indexKeys(f)
	if len(keys) == 1 && f.BSON == "_id" {
		return nil
	}
	_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: keys, Options: options.Index().SetUnique(true)})
	if err == nil {
		return nil
	}
	hint := "the server did not build it; nothing is numbered until it does"
	var ce mongo.CommandError
	if errors.As(err, &ce) || mongo.IsDuplicateKeyError(err) {
		hint = "remove the duplicates the collection holds (or the index of the same name that differs), or opt out of every unique index with autokeys.WithoutIndexes()"
	}
	return fmt.Errorf("autokeys: %v field %s `auto:\"%s\"`: collection %s.%s: creating the unique index %s %v: %w: %s: %w",
		p.schema.Type, f.Name, f.Tag, coll.Database().Name(), coll.Name(), indexName(keys), keys, err, hint, ErrNoUniqueIndex)
}

// warnUnprotected logs, at Warn, the key fields of p that no unique index
// protects in coll because of WithoutIndexes.
func (k *Keys) warnUnprotected(p *plan, coll *mongo.Collection) {
	var fields []string
	for _, f := range p.fields {
		if f.BSON != "_id" || len(indexKeys(f)) > 1 {
			fields = append(fields, f.BSON)
		}
	}
	if len(fields) == 0 {
		return
	}
	k.logger.Warn("autokeys: WithoutIndexes: no unique index protects these key fields; a duplicate the data holds or another writer stores is not caught",
		slog.String("type", p.schema.Type.String()),
		slog.String("collection", coll.Database().Name()+"."+coll.Name()),
		slog.Any("fields", fields))
}
