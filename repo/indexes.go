package repo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// ErrIndexConflict: an index the model declares (model.Index) disagrees
// with one the collection has, by name or by keys. The error names both.
var ErrIndexConflict = errors.New("repo: declared index conflicts with an existing index")

// WithIndexes makes New create the indexes the model declares (`index`
// tags and an Indexes method; see model.Index) that the collection lacks,
// and compare the others with what it has: an existing index with a
// declared index's name but other keys or options, or with its keys (and
// partial filter) under another name, is refused with ErrIndexConflict,
// naming both. Indexes the model does not declare are left alone.
//
// It is off by default, as Spring Data MongoDB's auto-index-creation is:
// an index build on a large collection is an operation to schedule, and
// the application's user may lack the createIndex privilege where
// migrations own the schema. The tags are checked by New either way.
func WithIndexes() Option { return func(c *config) { c.indexes = true } }

// ensureIndexes creates s's missing indexes in coll after comparing them
// with the existing ones.
func ensureIndexes(s *model.Schema, coll *mongo.Collection) error {
	if len(s.Indexes) == 0 {
		return nil
	}
	// Detached from any caller: New takes no context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		return fmt.Errorf("listing the indexes of collection %q: %w", coll.Name(), err)
	}
	var existing []bson.Raw
	if err := cur.All(ctx, &existing); err != nil {
		return fmt.Errorf("listing the indexes of collection %q: %w", coll.Name(), err)
	}
	var missing []mongo.IndexModel
	for i := range s.Indexes {
		ix := &s.Indexes[i]
		found, err := compareIndex(ix, existing)
		if err != nil {
			return fmt.Errorf("collection %q: %w", coll.Name(), err)
		}
		if !found {
			missing = append(missing, ix.Model())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := coll.Indexes().CreateMany(ctx, missing); err != nil {
		return fmt.Errorf("creating the declared indexes of collection %q: %w", coll.Name(), err)
	}
	return nil
}

// compareIndex reports whether existing holds ix, or an error when one of
// them conflicts with it.
func compareIndex(ix *model.Index, existing []bson.Raw) (bool, error) {
	want := specOf(ix)
	for _, raw := range existing {
		have := readSpec(raw)
		sameName := have.Name == ix.Name
		sameKeys := equalValues(have.key, want.key) && equalValues(have.partial, want.partial)
		if !sameName && !sameKeys {
			continue
		}
		var what string
		switch {
		case sameName && !equalValues(have.key, want.key):
			what = "the same name with other keys"
		case !sameName:
			what = "the same keys under another name"
		case !have.sameOptions(want):
			what = "the same name and keys with other options"
		default:
			return true, nil
		}
		return false, fmt.Errorf("declared index %s and existing index %s have %s; drop the existing index or change the declaration: %w",
			ix, have, what, ErrIndexConflict)
	}
	return false, nil
}
