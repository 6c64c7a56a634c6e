package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mgmevents/mgmevents/internal/serverinfo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// writeFor bounds how long a relay writes what it delivered after its
// context ended.
const writeFor = 10 * time.Second

// writing returns a context for the writes that record what the relay
// delivered: one that goes on for writeFor after ctx ends, so that a
// relay that is stopped (its Run's ctx ends) still records what it
// published, and no other relay publishes that again. Until ctx ends it
// sets no deadline of its own: a write cut short would leave published
// events to be published again. A late write is safe: it removes only
// what the relay delivered, by ID.
func (r *Relay) writing(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(writeFor, cancel) })
	return wctx, func() { stop(); cancel() }
}

// remove removes from their documents the events outs delivered or moved
// to DeadLetters, and only those. Where the server applies a filtered
// write atomically, each document gets one conditional write (with a
// fallback when a writer added events meanwhile). Where it does not
// (FerretDB 1.x, with the single connection serialized requires, which
// also scans the whole collection for any filter but a lone _id), the
// relay reads each queue again by _id and writes by _id what that read
// allows, with operators that leave alone what a writer adds between the
// read and the write ($pullAll and $unset of exact events, $inc of the
// bytes); a write that ends a document's due time is followed by a read
// that restores it if a writer added work meanwhile (see redue). It
// writes on after ctx ends (see writing).
func (r *Relay) remove(ctx context.Context, coll *mongo.Collection, outs []outcome, atomic bool) error {
	if len(outs) == 0 {
		return nil
	}
	ctx, cancel := r.writing(ctx)
	defer cancel()
	var writes, fallbacks []mongo.WriteModel
	var fresh map[string][]string // idKey -> the queue as read again
	if !atomic {
		var err error
		if fresh, err = queues(ctx, coll, outs); err != nil {
			return fmt.Errorf("removing delivered events: %w", err)
		}
	}
	for i := range outs {
		o := &outs[i]
		if atomic {
			w, fb := o.conditional()
			writes, fallbacks = appendModel(writes, w), appendModel(fallbacks, fb)
		} else if q, ok := fresh[idKey(o.id)]; ok {
			writes = appendModel(writes, o.checked(q))
		}
	}
	if err := ended(ctx, r.db, outs); err != nil {
		return fmt.Errorf("removing delivered events: %w", err)
	}
	res, err := r.bulk(ctx, coll, writes)
	if err == nil && res.MatchedCount+res.DeletedCount < int64(len(writes)) && len(fallbacks) > 0 {
		_, err = r.bulk(ctx, coll, fallbacks)
	}
	if err == nil && !atomic {
		err = redue(ctx, coll, outs, r.now())
	}
	if err != nil {
		return fmt.Errorf("removing delivered events: %w", err)
	}
	r.removed.Add(res.DeletedCount)
	return nil
}

// queues reads again the queues of the documents of outs, by idKey, each
// by its _id alone: FerretDB answers that from its _id index, and any other
// filter with a scan of the collection.
func queues(ctx context.Context, coll *mongo.Collection, outs []outcome) (map[string][]string, error) {
	out := make(map[string][]string, len(outs))
	for _, o := range outs {
		var doc struct {
			Box struct {
				Queue []string `bson:"q"`
			} `bson:"_outbox"`
		}
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: o.id}}, options.FindOne().SetProjection(bson.D{{Key: path(partQueue), Value: 1}})).Decode(&doc)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[idKey(o.id)] = doc.Box.Queue
	}
	return out, nil
}

// redue makes due again each document of outs whose due time the
// relay's write ended while a writer added events (or deleted it) between
// the relay's read and that write; without it, they would wait for a next
// write. One read by _id per such document: FerretDB scans for any other
// filter.
func redue(ctx context.Context, coll *mongo.Collection, outs []outcome, now time.Time) error {
	for i := range outs {
		if !outs[i].undue {
			continue
		}
		id := bson.D{{Key: "_id", Value: outs[i].id}}
		var doc struct {
			Box struct {
				Queue []string `bson:"q"`
				Gone  bool     `bson:"gone"`
				Due   any      `bson:"due"`
			} `bson:"_outbox"`
		}
		err := coll.FindOne(ctx, id, options.FindOne().SetProjection(bson.D{{Key: Field, Value: 1}})).Decode(&doc)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue
		}
		if err != nil {
			return err
		}
		if doc.Box.Due != nil || (len(doc.Box.Queue) == 0 && !doc.Box.Gone) {
			continue
		}
		if _, err := coll.UpdateOne(ctx, id, bson.D{{Key: "$min", Value: bson.D{{Key: path(partDue), Value: date(now)}}}}); err != nil {
			return err
		}
	}
	return nil
}

func appendModel(ws []mongo.WriteModel, w mongo.WriteModel) []mongo.WriteModel {
	if w == nil {
		return ws
	}
	return append(ws, w)
}

// conditional returns the write that records o on a server that applies
// filtered writes atomically: when the queue is still as read and all of
// it is done, one that empties the document (or removes a deleted one),
// with a fallback for when it is not; otherwise one that removes what was
// done, only where it still is.
func (o *outcome) conditional() (write, fallback mongo.WriteModel) {
	id := bson.D{{Key: "_id", Value: o.id}}
	var partial mongo.WriteModel
	if len(o.done) > 0 {
		partial = mongo.NewUpdateOneModel().SetFilter(append(id, bson.E{Key: path(partQueue), Value: bson.D{{Key: "$all", Value: o.done}}})).SetUpdate(o.removal(o.done))
	} else if o.failed != "" {
		partial = mongo.NewUpdateOneModel().SetFilter(append(id, bson.E{Key: path(partQueue), Value: o.failed})).SetUpdate(o.removal(nil))
	}
	if !o.emptied() {
		return partial, nil
	}
	exact := append(id, bson.E{Key: path(partQueue), Value: o.read})
	if len(o.read) == 0 {
		exact = append(id, bson.E{Key: path(partQueue, "0"), Value: bson.D{{Key: "$exists", Value: false}}})
	}
	if !o.gone {
		exact = append(exact, hidden) // deleted meanwhile: a tombstone stays due
	}
	return o.emptying(exact, true), partial
}

// checked returns the write, by _id, that records o given the queue as
// read again just before, or nil when there is nothing to write. It never
// sets the queue or the bytes, which a writer may change before the write
// lands; when it ends the document's due time it marks o undue, for redue.
func (o *outcome) checked(fresh []string) mongo.WriteModel {
	id := bson.D{{Key: "_id", Value: o.id}}
	if o.gone && o.emptied() && slices.Equal(fresh, o.read) {
		return o.emptying(id, false) // a tombstone: no writer adds to it
	}
	var still []string
	for _, e := range o.done {
		if slices.Contains(fresh, e) {
			still = append(still, e)
		}
	}
	if !slices.Contains(fresh, o.failed) {
		o.retry = nil
	}
	update := o.removal(still)
	if o.failed == "" && len(still) == len(fresh) {
		update = append(update, bson.E{Key: "$unset", Value: bson.D{{Key: path(partDue), Value: ""}}})
		o.undue = true
	}
	if len(update) == 0 {
		return nil
	}
	return mongo.NewUpdateOneModel().SetFilter(id).SetUpdate(mergeOps(update))
}

// mergeOps returns update with the fields of repeated operators merged
// under one.
func mergeOps(update bson.D) bson.D {
	var out bson.D
	for _, op := range update {
		i := slices.IndexFunc(out, func(e bson.E) bool { return e.Key == op.Key })
		if i < 0 {
			out = append(out, op)
			continue
		}
		out[i].Value = append(slices.Clip(out[i].Value.(bson.D)), op.Value.(bson.D)...)
	}
	return out
}

// emptying returns the write that leaves the document filter matches with
// nothing pending and nothing due, or removes it when it is a tombstone
// (checked again by the filter when recheck is set).
func (o *outcome) emptying(filter bson.D, recheck bool) mongo.WriteModel {
	if o.gone {
		if recheck {
			filter = append(filter, bson.E{Key: path(partGone), Value: true})
		}
		return mongo.NewDeleteOneModel().SetFilter(filter)
	}
	set := bson.D{{Key: path(partQueue), Value: bson.A{}}, {Key: path(partBytes), Value: 0}}
	if o.newBase {
		set = append(set, bson.E{Key: path(partBase), Value: o.base})
	}
	return mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(bson.D{
		{Key: "$set", Value: set},
		{Key: "$unset", Value: bson.D{{Key: path(partEvents), Value: ""}, {Key: path(partTries), Value: ""}, {Key: path(partDue), Value: ""}, {Key: path(partHold), Value: ""}}},
	})
}

// removal returns the update that removes events evs, and records a
// failed attempt if o has one.
func (o *outcome) removal(evs []string) bson.D {
	update := bson.D{}
	if len(evs) > 0 {
		unset := make(bson.D, 0, 2*len(evs))
		var bytes int64
		for _, e := range evs {
			unset = append(unset, bson.E{Key: path(partEvents, e), Value: ""}, bson.E{Key: path(partTries, e), Value: ""})
			bytes += o.size[e]
		}
		if o.retry == nil {
			unset = append(unset, bson.E{Key: path(partHold), Value: ""}) // the backoff is over
		}
		update = append(update,
			bson.E{Key: "$pullAll", Value: bson.D{{Key: path(partQueue), Value: evs}}},
			bson.E{Key: "$unset", Value: unset},
			bson.E{Key: "$inc", Value: bson.D{{Key: path(partBytes), Value: -bytes}}})
	}
	if o.retry != nil {
		update = append(update, bson.E{Key: "$set", Value: o.retry})
	}
	if len(update) > 0 && o.newBase {
		update = mergeOps(append(update, bson.E{Key: "$set", Value: bson.D{{Key: path(partBase), Value: o.base}}}))
	}
	return update
}

// bulk sends writes in bulk writes. FerretDB 1.x keeps the cursor of each
// update of a bulk write open until the whole command ends, so a hundred
// of them exhaust its pool of SQLite connections and the command never
// ends; there it sends a few at a time.
func (r *Relay) bulk(ctx context.Context, coll *mongo.Collection, writes []mongo.WriteModel) (mongo.BulkWriteResult, error) {
	var sum mongo.BulkWriteResult
	if len(writes) == 0 {
		return sum, nil
	}
	size := len(writes)
	if atomic, err := r.atomicWrites(ctx); err != nil {
		return sum, err
	} else if !atomic {
		size = ferretBulk
	}
	for chunk := range slices.Chunk(writes, size) {
		res, err := coll.BulkWrite(ctx, chunk, options.BulkWrite().SetOrdered(false))
		if err != nil {
			return sum, err
		}
		sum.MatchedCount += res.MatchedCount
		sum.DeletedCount += res.DeletedCount
	}
	return sum, nil
}

// atomicWrites reports whether the server applies a filtered write
// atomically (see serverinfo), unless a test said.
func (r *Relay) atomicWrites(ctx context.Context) (bool, error) {
	if r.cfg.atomic != nil {
		return *r.cfg.atomic, nil
	}
	return serverinfo.AtomicWrites(ctx, r.db)
}

// ferretBulk is how many updates go in one bulk write on FerretDB.
const ferretBulk = 8
