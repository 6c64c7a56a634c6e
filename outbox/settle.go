package outbox

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// settle records o, right after its delivery, on a server that does not
// apply filtered writes atomically (FerretDB 1.x, which also scans the
// whole collection for any filter but a lone _id): one findAndModify by
// _id that removes what o did, ends the document's due time when o did
// all it read, and returns the queue as it was before, so that no read
// precedes the write. From that queue it fixes, in a second write by _id
// that only a race needs, what the removal assumed wrongly: the bytes of
// events that were gone already (another relay removed them after this
// one's lease ran out), the attempt of a failed event that was gone, and
// the due time of a document a writer added events to (or deleted)
// meanwhile. A tombstone is removed as before (see remove): read again,
// then deleted only when nothing was added. It writes on after ctx ends
// (see writing).
func (r *Relay) settle(ctx context.Context, coll *mongo.Collection, o outcome) error {
	ctx, cancel := r.writing(ctx)
	defer cancel()
	if o.gone {
		return r.remove(ctx, coll, []outcome{o}, false)
	}
	update := o.removal(o.done)
	if o.emptied() {
		update = append(update, bson.E{Key: "$unset", Value: bson.D{{Key: path(partDue), Value: ""}}})
	}
	if len(update) == 0 {
		return nil
	}
	id := bson.D{{Key: "_id", Value: o.id}}
	var before struct {
		Box struct {
			Queue []string `bson:"q"`
			Gone  bool     `bson:"gone"`
		} `bson:"_outbox"`
	}
	// No projection: FerretDB's findAndModify does not implement one.
	opts := options.FindOneAndUpdate().SetReturnDocument(options.Before)
	err := coll.FindOneAndUpdate(ctx, id, mergeOps(update), opts).Decode(&before)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		return err
	}
	fix := o.fixes(before.Box.Queue, before.Box.Gone, r.now())
	if len(fix) == 0 {
		return nil
	}
	_, err = coll.UpdateOne(ctx, id, mergeOps(fix))
	return err
}

// fixes returns what settle's write got wrong, given the queue and the
// tombstone flag as they were just before it.
func (o *outcome) fixes(queue []string, gone bool, now time.Time) bson.D {
	var fix bson.D
	var back int64
	for _, e := range o.done {
		if !slices.Contains(queue, e) {
			back += o.size[e]
		}
	}
	if back > 0 {
		fix = append(fix, bson.E{Key: "$inc", Value: bson.D{{Key: path(partBytes), Value: back}}})
	}
	if o.retry != nil && !slices.Contains(queue, o.failed) {
		fix = append(fix, bson.E{Key: "$unset", Value: bson.D{{Key: path(partTries, o.failed), Value: ""}, {Key: path(partHold), Value: ""}}})
	}
	if o.emptied() {
		rest := slices.DeleteFunc(slices.Clone(queue), func(e string) bool { return slices.Contains(o.done, e) })
		if len(rest) > 0 || gone {
			fix = append(fix, bson.E{Key: "$min", Value: bson.D{{Key: path(partDue), Value: date(now)}}})
		}
	}
	return fix
}
