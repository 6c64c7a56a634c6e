package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/mgmevents/mgmevents/events"
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

// bumpVersion sets a versioned model's version field to the version the
// write stores, before BeforeConvert, so that its listeners see what
// BeforeSave's and the database will: 1 for an insert of a model at 0,
// the version read plus one for a replace or an update (whose filter
// holds the version read). u keeps the value before, for undo.
func (r *Repository[T]) bumpVersion(mv reflect.Value, op events.Op, u *undo) error {
	vf := r.schema.Version
	if vf == nil {
		return nil
	}
	f := vf.Value(mv.Elem())
	u.hadVersion, u.version = true, reflect.New(f.Type()).Elem()
	u.version.Set(f)
	switch {
	case op == events.OpInsert && f.IsZero():
		setInt(f, 1)
	case op != events.OpInsert:
		old := intOf(f)
		if uint64(old) >= vf.Max {
			return fmt.Errorf("version of %v overflows %v", r.schema.Type, f.Type())
		}
		u.versioned, u.old = true, old // modelFilter holds old
		setInt(f, old+1)
	}
	u.bumped = intOf(f)
	return nil
}

// keptVersion refuses a version that a BeforeConvert listener changed:
// the write's filter and claim hold the version bumpVersion moved on from,
// and optimistic locking holds only if the document stores the next one.
func (r *Repository[T]) keptVersion(mv reflect.Value, u *undo) error {
	vf := r.schema.Version
	if vf == nil {
		return nil
	}
	if v := intOf(vf.Value(mv.Elem())); v != u.bumped {
		return fmt.Errorf("a BeforeConvert listener changed %v's version field %s from %d to %d; the repository sets it (`auto:\"version\"`): %w",
			r.schema.Type, vf.Name, u.bumped, v, ErrInvalidArgument)
	}
	return nil
}
