package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// pendingDoc is a document with work, as a relay reads it.
type pendingDoc struct {
	ID  any `bson:"_id"`
	Box box `bson:"_outbox"`
	raw bson.Raw
	key string // its lease key
}

// drain delivers what is due in coll, batch after batch.
func (r *Relay) drain(ctx context.Context, coll *mongo.Collection) (int, error) {
	if err := r.index(ctx, coll); err != nil {
		return 0, err
	}
	total := 0
	var others bson.A // documents other relays hold, skipped for this Drain
	for {
		filter := bson.D{{Key: path(partDue), Value: bson.D{{Key: "$lte", Value: time.Now()}}}}
		if len(others) > 0 {
			filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$nin", Value: others}}})
		}
		docs, err := r.due(ctx, coll, filter)
		if err != nil || len(docs) == 0 {
			return total, err
		}
		keys := make([]string, len(docs))
		for i, d := range docs {
			keys[i] = d.key
		}
		mine, err := r.leases.claim(ctx, keys)
		if err != nil {
			return total, err
		}
		var writes []mongo.WriteModel
		var fallbacks []mongo.WriteModel
		for _, d := range docs {
			if !mine[d.key] {
				if len(others) < 10*r.cfg.batch {
					others = append(others, d.ID)
				}
				continue
			}
			n, w, fb, err := r.deliver(ctx, coll, d)
			total += n
			writes = append(writes, w...)
			fallbacks = append(fallbacks, fb...)
			if err != nil {
				_ = r.write(ctx, coll, writes, fallbacks)
				return total, err
			}
		}
		if err := r.write(ctx, coll, writes, fallbacks); err != nil {
			return total, err
		}
		if len(writes) == 0 || len(docs) < r.cfg.batch {
			return total, nil
		}
	}
}

// due reads a batch of documents with work, oldest due first.
func (r *Relay) due(ctx context.Context, coll *mongo.Collection, filter bson.D) ([]pendingDoc, error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: path(partDue), Value: 1}}).SetLimit(int64(r.cfg.batch)))
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var docs []pendingDoc
	for cur.Next(ctx) {
		var d pendingDoc
		if err := cur.Decode(&d); err != nil {
			return nil, fmt.Errorf("reading %s of a document: %w", Field, err)
		}
		d.raw = bson.Raw(append([]byte(nil), cur.Current...))
		d.key = strconv.Itoa(len(coll.Name())) + ":" + coll.Name() + "|" + idKey(d.ID)
		docs = append(docs, d)
	}
	return docs, cur.Err()
}

// write applies the removals of a batch in one round trip; when some did
// not apply as written (a writer added events meanwhile), the fallbacks,
// which remove only what was delivered, follow.
func (r *Relay) write(ctx context.Context, coll *mongo.Collection, writes, fallbacks []mongo.WriteModel) error {
	if len(writes) == 0 {
		return nil
	}
	res, err := coll.BulkWrite(ctx, writes, options.BulkWrite().SetOrdered(false))
	if err != nil {
		return fmt.Errorf("removing delivered events: %w", err)
	}
	if int(res.MatchedCount+res.DeletedCount) == len(writes) || len(fallbacks) == 0 {
		return nil
	}
	if _, err := coll.BulkWrite(ctx, fallbacks, options.BulkWrite().SetOrdered(false)); err != nil {
		return fmt.Errorf("removing delivered events: %w", err)
	}
	return nil
}

// deliver publishes d's events in order while the lease holds, and
// returns how many it delivered and the writes that record it: a write
// that empties the document (or removes a deleted one) if nothing was
// added since it was read, and a fallback that removes only what was
// delivered.
func (r *Relay) deliver(ctx context.Context, coll *mongo.Collection, d pendingDoc) (n int, writes, fallbacks []mongo.WriteModel, err error) {
	b := d.Box
	id := bson.D{{Key: "_id", Value: d.ID}}
	var done []string
	var bytes int64
	var retry *bson.D // $set of a failed attempt and its backoff
	base := b.Count - int64(len(b.Queue))
	for i, evID := range b.Queue {
		if !r.leases.valid(d.key) || ctx.Err() != nil {
			break
		}
		ev, ok := b.Events[evID]
		m := Message{ID: evID, Type: ev.Type, Source: coll.Name(), Subject: subject(d.ID), Tenant: tenant(d.raw, b.Tenant),
			Seq: base + int64(i) + 1, Time: ev.At, Data: ev.Data, Attempt: b.Tries[evID].N + 1}
		var perr error
		if ok {
			perr = r.pub.Publish(ctx, m)
		} else {
			perr = errors.New("the event's body is missing from the document")
			m.Attempt = r.cfg.maxAttempts
		}
		if perr == nil {
			n++
			done = append(done, evID)
			bytes += int64(len(ev.Data) + len(ev.Type) + len(evID))
			continue
		}
		if ctx.Err() != nil {
			break // stopped, not failed
		}
		r.failed.Add(1)
		if m.Attempt >= r.cfg.maxAttempts {
			if err = r.bury(ctx, m, perr); err != nil {
				break
			}
			done = append(done, evID)
			bytes += int64(len(ev.Data) + len(ev.Type) + len(evID))
			continue
		}
		retry = &bson.D{
			{Key: path(partTries, evID), Value: tries{N: m.Attempt, Err: perr.Error()}},
			{Key: path(partDue), Value: time.Now().Add(r.cfg.backoff(m.Attempt))},
		}
		break
	}
	r.delivered.Add(int64(n))
	all := len(done) == len(b.Queue)
	if all {
		// Nothing added since the read: empty the document, or remove it.
		exact := append(id, bson.E{Key: path(partQueue), Value: b.Queue})
		if len(b.Queue) == 0 {
			exact = append(id, bson.E{Key: path(partQueue, "0"), Value: bson.D{{Key: "$exists", Value: false}}})
		}
		if b.Gone {
			writes = append(writes, mongo.NewDeleteOneModel().SetFilter(append(exact, bson.E{Key: path(partGone), Value: true})))
			r.removed.Add(1)
		} else {
			writes = append(writes, mongo.NewUpdateOneModel().SetFilter(exact).SetUpdate(bson.D{
				{Key: "$set", Value: bson.D{{Key: path(partQueue), Value: bson.A{}}, {Key: path(partBytes), Value: 0}}},
				{Key: "$unset", Value: bson.D{{Key: path(partEvents), Value: ""}, {Key: path(partTries), Value: ""}, {Key: path(partDue), Value: ""}}},
			}))
		}
	}
	if len(done) == 0 && retry == nil {
		return n, writes, nil, err
	}
	// Remove what was delivered, and only that, wherever it still is.
	filter := append(id, bson.E{Key: path(partQueue), Value: bson.D{{Key: "$all", Value: done}}})
	if len(done) == 0 {
		filter = append(id, bson.E{Key: path(partQueue), Value: b.Queue[0]})
	}
	update := bson.D{}
	if len(done) > 0 {
		unset := make(bson.D, 0, 2*len(done))
		for _, e := range done {
			unset = append(unset, bson.E{Key: path(partEvents, e), Value: ""}, bson.E{Key: path(partTries, e), Value: ""})
		}
		update = append(update,
			bson.E{Key: "$pullAll", Value: bson.D{{Key: path(partQueue), Value: done}}},
			bson.E{Key: "$unset", Value: unset},
			bson.E{Key: "$inc", Value: bson.D{{Key: path(partBytes), Value: -bytes}}})
	}
	if retry != nil {
		update = append(update, bson.E{Key: "$set", Value: *retry})
	}
	w := mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(update)
	if all {
		return n, writes, []mongo.WriteModel{w}, err
	}
	return n, append(writes, w), nil, err
}

// bury moves m to DeadLetters with its last error. Its _id is the
// message's ID, so burying it twice stores it once.
func (r *Relay) bury(ctx context.Context, m Message, cause error) error {
	_, err := r.db.Collection(DeadLetters).InsertOne(ctx, deadLetter{ID: m.ID, Type: m.Type, Source: m.Source, Subject: m.Subject, Tenant: m.Tenant,
		Seq: m.Seq, Time: m.Time, Data: m.Data, Attempts: m.Attempt, Error: cause.Error(), At: time.Now()})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("moving message %s to %s: %w", m.ID, DeadLetters, err)
	}
	r.dead.Add(1)
	r.cfg.logger.WarnContext(ctx, "outbox: message moved to dead letters after its last attempt",
		"collection", DeadLetters, "id", m.ID, "type", m.Type, "source", m.Source, "subject", m.Subject, "seq", m.Seq, "attempts", m.Attempt, "error", cause)
	r.countDead(ctx, true)
	return nil
}

// deadLetter is a message in DeadLetters.
type deadLetter struct {
	ID       string    `bson:"_id"`
	Type     string    `bson:"type"`
	Source   string    `bson:"source"`
	Subject  string    `bson:"subject"`
	Tenant   string    `bson:"tenant,omitempty"`
	Seq      int64     `bson:"seq"`
	Time     time.Time `bson:"time"`
	Data     bson.Raw  `bson:"data,omitempty"`
	Attempts int       `bson:"attempts"`
	Error    string    `bson:"error"`
	At       time.Time `bson:"at"`
}

// subject is a document's _id as Message.Subject: hex for an ObjectID.
func subject(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return v.Hex()
	case string:
		return v
	}
	return fmt.Sprint(id)
}

// idKey is a document's _id in a lease key, its type told apart.
func idKey(id any) string {
	switch v := id.(type) {
	case primitive.ObjectID:
		return "o:" + v.Hex()
	case string:
		return "s:" + v
	}
	return fmt.Sprintf("%T:%v", id, id)
}

// tenant reads the tenant field of a document, or "".
func tenant(doc bson.Raw, field string) string {
	if field == "" {
		return ""
	}
	s, _ := doc.Lookup(field).StringValueOK()
	return s
}
