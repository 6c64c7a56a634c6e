package repo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mgmevents/mgmevents/internal/serverinfo"
	"github.com/mgmevents/mgmevents/sequence"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// Optimistic locking filters a versioned write on the version read, which
// MongoDB applies atomically. Where the server does not (FerretDB 1.x: two
// writers can both match the old version, and one update is lost), each
// transition v -> v+1 is settled first by inserting a claim document with
// the unique _id "<id>#<v+1>" into "<collection>.versions": one writer wins,
// the others get ErrVersionConflict. That is two round trips: the claim
// insert and the filtered write; the claim is deleted later, in a batch
// (version_sweep.go). A claim left by a writer that died before its write
// is cleared after staleClaim. WithVersionStrategy forces either way.

const staleClaim = 30 * time.Second

type versionClaim struct {
	ID string    `bson:"_id"`
	At time.Time `bson:"at"`
}

func claimKey(id any, version int64) string {
	if oid, ok := id.(primitive.ObjectID); ok {
		return fmt.Sprintf("%s#%d", oid.Hex(), version)
	}
	return fmt.Sprintf("%v#%d", id, version)
}

// claimVersion settles the transition to version next, when the server
// needs it. It returns the claim's key ("" when none was needed).
func (r *Repository[T]) claimVersion(ctx context.Context, id any, next int64) (string, error) {
	db := r.coll.Database()
	switch r.vstrat {
	case sequence.Atomic:
		return "", nil
	case sequence.Detect:
		atomic, err := serverinfo.AtomicWrites(ctx, db)
		if err != nil || atomic {
			return "", err
		}
	}
	claims := db.Collection(r.coll.Name() + ".versions")
	key := claimKey(id, next)
	for range 2 {
		_, err := claims.InsertOne(ctx, versionClaim{ID: key, At: time.Now()})
		if err == nil {
			return key, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return "", fmt.Errorf("claiming version %d: %w", next, err)
		}
		var c versionClaim
		err = claims.FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Decode(&c)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue // released meanwhile
		}
		if err != nil {
			return "", err
		}
		if time.Since(c.At) < staleClaim {
			break
		}
		// The holder died between its claim and its write if the document
		// is still at the version before: free the place.
		n, err := r.coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}, {Key: r.schema.Version.BSON, Value: next - 1}})
		if err != nil || n == 0 {
			break
		}
		if _, err := claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: key}, {Key: "at", Value: c.At}}); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%v %v: version %d was taken: %w", r.schema.Type, id, next-1, ErrVersionConflict)
}

// releaseVersion deletes the claim of a write that failed, so that the
// version is free again at once.
func (r *Repository[T]) releaseVersion(ctx context.Context, key string) {
	if key != "" {
		_, _ = r.coll.Database().Collection(r.coll.Name()+".versions").DeleteOne(ctx, bson.D{{Key: "_id", Value: key}})
	}
}
