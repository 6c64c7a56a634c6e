package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// pendingDoc is a document with work, as a relay reads it.
type pendingDoc struct {
	ID   any `bson:"_id"`
	Box  box `bson:"_outbox"`
	raw  bson.Raw
	key  string // its lease key
	base int64  // the Seq before its first event: Box.Base, or read from Seqs
}

// drain delivers what is due in coll, batch after batch; othersHold
// reports that it ended on due documents other relays hold.
func (r *Relay) drain(ctx context.Context, coll *mongo.Collection) (total int, othersHold bool, err error) {
	if err := r.index(ctx, coll); err != nil {
		return 0, false, err
	}
	atomic, err := r.atomicWrites(ctx)
	if err != nil {
		return 0, false, err
	}
	// Documents other relays, or Drains, hold, skipped for this Drain.
	others := r.leases.elsewhere(keyPrefix(coll), maxOthers)
	var held []string // what this batch works on, which the relay's other Drains skip
	release := func() {
		r.leases.finished(held) // before another Drain can take them
		for _, k := range held {
			r.busy.Delete(k)
		}
		held = held[:0]
	}
	defer release()
	stale := 0 // reads in a row that a new slot made stale before any claim
	for {
		members := r.members(ctx, coll)
		limit := readLimit(r.cfg.batch, len(members))
		readAt, ticket := r.now(), r.leases.openRead()
		docs, bad, err := r.due(ctx, coll, dueFilter(readAt, others), limit)
		if err != nil || len(docs) == 0 {
			r.leases.closeRead(ticket)
		}
		if err != nil {
			return total, false, err
		}
		if len(bad) > 0 { // left out of every relay's reads for a while
			kept := r.setAside(ctx, coll, bad)
			others = append(others, kept...)
			if len(docs) == 0 && (len(kept) == 0 || len(others) < maxOthers) {
				continue
			}
		}
		if len(docs) == 0 {
			return total, false, nil
		}
		// The relay's share of what it read, or, when none of it falls
		// to the relay, all of it: documents whose relays stopped or lag.
		complete := len(docs)+len(bad) < limit // it holds every document due at readAt
		mine := r.ours(docs, members)
		all, steal := len(mine) == len(docs), len(mine) == 0
		if steal { // newest first, away from where their relays work
			mine, all = slices.Clone(docs), true
			slices.Reverse(mine)
		}
		b := readBatch{coll: coll, atomic: atomic, slot: r.leases.slot(readAt), ticket: ticket, held: &held, others: &others, release: release}
		if !steal {
			b.ours = func(rest []pendingDoc) []pendingDoc { return r.ours(rest, r.members(ctx, coll)) }
		}
		worked, n, fresh, err := r.chunks(ctx, &b, mine, readAt)
		if err == nil && fresh && !all && complete {
			// The read holds every document due at readAt, and the
			// relay went through its share: it claims what the others
			// have not claimed yet of theirs, newest first, from this
			// read, instead of reading them again (a scan, on servers
			// that do not read the due documents through the index).
			b.ours = nil
			rest := r.theirs(docs, mine)
			w, m, done, serr := r.chunks(ctx, &b, rest, readAt)
			worked, n, err = worked+w, n+m, serr
			if err == nil && (done || r.leases.lasts(b.slot, r.now())) {
				// What the relay did not take, others hold or
				// work towards: the next read waits for them.
				r.leases.closeRead(ticket)
				return total + n, w < len(rest), nil
			}
			fresh = done
		}
		r.leases.closeRead(ticket)
		total += n
		if err != nil {
			return total, false, err
		}
		if steal && (worked == 0 || !fresh && r.leases.lasts(b.slot, r.now())) {
			// Their relays work on them, or on the rest of them: a
			// read now would find them held, and slow them down.
			return total, true, nil
		}
		if !fresh && worked == 0 {
			if stale++; stale > 2 {
				return total, false, nil
			}
			continue
		}
		stale = 0
		// A batch of documents all held by others is skipped: the next
		// query leaves them out, so that relays spread over the work.
		if fresh && ((complete && all) || (worked == 0 && len(others) >= maxOthers)) {
			return total, false, nil
		}
	}
}

// theirs returns, newest first, the documents of docs that are not in
// mine.
func (r *Relay) theirs(docs, mine []pendingDoc) []pendingDoc {
	own := make(map[string]bool, len(mine))
	for _, d := range mine {
		own[d.key] = true
	}
	var rest []pendingDoc
	for i := len(docs) - 1; i >= 0; i-- {
		if !own[docs[i].key] {
			rest = append(rest, docs[i])
		}
	}
	return rest
}

// maxRead is the most documents a relay reads at once, however many
// relays share the collection.
const maxRead = 1000

// readLimit is how many documents a relay with batch reads for members
// relays: batch each, maxRead at most, computed without a product that
// could overflow (a batch of math.MaxInt is allowed).
func readLimit(batch, members int) int {
	batch = min(batch, maxRead)
	if members > maxRead/batch {
		return maxRead
	}
	return batch * members
}

// maxHold is the longest a relay holds a document back (see WithBackoff,
// asideFor).
const maxHold = 24 * time.Hour

// dueFilter selects the documents due at now, but those of others.
func dueFilter(now time.Time, others bson.A) bson.D {
	filter := bson.D{
		{Key: path(partDue), Value: bson.D{{Key: "$lte", Value: date(now)}}},
		{Key: "$or", Value: bson.A{ // a hold further ahead than maxHold is no relay's
			bson.D{{Key: path(partHold), Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$gt", Value: date(now)}}}}}},
			bson.D{{Key: path(partHold), Value: bson.D{{Key: "$gt", Value: date(now.Add(maxHold))}}}},
		}},
		{Key: Field, Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$type", Value: "array"}}}}}, // no relay writes one, nor can set it aside
	}
	if len(others) > 0 {
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$nin", Value: others}}})
	}
	return filter
}

// work delivers the documents of docs, read for b, that the relay holds
// (mine) and no other Drain of it works on, nor has worked on since the
// read, adding them to b.held, and those others hold to b.others; it
// returns how many documents it worked on and how many
// messages it delivered. Before each document, it renews the leases of
// those it still has to work on once they near their end (see renew), so
// that a relay keeps what it claimed while it works through the batch; a
// document whose lease lapsed is left for a later read. What was
// published is removed while the lease holds, so that no other relay
// publishes it again: on a server with atomic filtered writes in bulk
// writes of a few documents, elsewhere document by document (see settle).
func (r *Relay) work(ctx context.Context, b *readBatch, docs []pendingDoc, mine map[string]bool) (worked, total int, err error) {
	coll, atomic := b.coll, b.atomic
	var outs []outcome
	var first time.Time // when the relay stops publishing the first document in outs
	// The removals in outs are written before a publish that may end
	// after first, a renewed lease's: the documents of outs are not
	// renewed, and another relay may claim them once first is past.
	flush := func(until time.Time) error {
		if len(outs) == 0 || !until.After(first) {
			return nil
		}
		err := r.remove(ctx, coll, outs, atomic)
		outs = nil
		return err
	}
	for i, d := range docs {
		if mine[d.key] {
			if _, other := r.busy.LoadOrStore(d.key, struct{}{}); other {
				mine[d.key] = false // another Drain of this relay works on it
			} else if r.leases.since(d.key, b.ticket) {
				// Another Drain of this relay worked on it after this
				// read: what was read of it may be stale. A later read
				// takes it.
				r.busy.Delete(d.key)
				mine[d.key] = false
				continue
			} else {
				*b.held = append(*b.held, d.key)
			}
		}
		if !mine[d.key] {
			if len(*b.others) < maxOthers {
				*b.others = append(*b.others, d.ID)
			}
			continue
		}
		if !r.leases.valid(d.key, b.slot) {
			if err := r.renew(ctx, docs[i:], mine); err != nil {
				return worked, total, errors.Join(err, r.remove(ctx, coll, outs, atomic))
			}
			if !r.leases.valid(d.key, b.slot) {
				continue // lapsed, or another Drain's since: what was read of it may be stale
			}
		}
		out, err := r.deliver(ctx, coll, d, b.slot, flush)
		total += len(out.delivered)
		worked++
		if !atomic {
			if serr := r.settle(ctx, coll, out); errors.Join(err, serr) != nil {
				return worked, total, errors.Join(err, serr)
			}
			continue
		}
		if len(outs) == 0 {
			first = r.leases.until(d.key)
		}
		outs = append(outs, out)
		if err != nil || len(outs) >= ferretBulk || first.Sub(r.now()) < r.cfg.lease/6 {
			rerr := r.remove(ctx, coll, outs, atomic)
			outs = nil
			if err = errors.Join(err, rerr); err != nil {
				return worked, total, err
			}
		}
	}
	return worked, total, r.remove(ctx, coll, outs, atomic)
}

// renew renews the leases of the documents of docs the relay holds.
func (r *Relay) renew(ctx context.Context, docs []pendingDoc, mine map[string]bool) error {
	var keys []leaseKey
	for _, d := range docs {
		if mine[d.key] {
			keys = append(keys, leaseKey{d.key, d.ID})
		}
	}
	_, err := r.leases.renew(ctx, keys)
	return err
}

// maxOthers is how many documents held by other relays one Drain skips.
const maxOthers = 1000

// due reads up to limit documents with work, oldest due first; it
// returns apart those whose Field it cannot decode (see setAside).
func (r *Relay) due(ctx context.Context, coll *mongo.Collection, filter bson.D, limit int) (docs []pendingDoc, bad []badDoc, err error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: path(partDue), Value: 1}}).SetLimit(int64(limit)).SetBatchSize(int32(limit)))
	if err != nil {
		return nil, nil, err
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		raw := bson.Raw(append([]byte(nil), cur.Current...))
		var d pendingDoc
		if err := bson.Unmarshal(raw, &d); err != nil { // the default registry, as written
			bad = append(bad, badDoc{raw: raw, err: err})
			continue
		}
		d.raw = raw
		d.key = keyPrefix(coll) + idKey(d.ID)
		docs = append(docs, d)
	}
	return docs, bad, cur.Err()
}

// keyPrefix is how the lease keys of coll's documents start.
func keyPrefix(coll *mongo.Collection) string {
	return strconv.Itoa(len(coll.Name())) + ":" + coll.Name() + "|"
}

// bases sets the base of the documents the relay holds: Box.Base, or,
// for a document without one (no relay removed its events yet), the last
// Seq in Seqs of earlier documents with its _id, read only when Seqs is
// not empty. A document read here was inserted before this read, so its
// predecessor's Seq, written before its removal, is in Seqs by now.
func (r *Relay) bases(ctx context.Context, docs []pendingDoc, mine map[string]bool) error {
	var need []*pendingDoc
	for i := range docs {
		d := &docs[i]
		if d.Box.Base != nil {
			d.base = *d.Box.Base
		} else if mine[d.key] {
			need = append(need, d)
		}
	}
	if len(need) == 0 {
		return nil
	}
	seqs := r.db.Collection(Seqs)
	err := seqs.FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	for _, d := range need {
		if err != nil {
			break
		}
		var last struct {
			N int64 `bson:"n"`
		}
		err = seqs.FindOne(ctx, bson.D{{Key: "_id", Value: d.key}}).Decode(&last)
		if errors.Is(err, mongo.ErrNoDocuments) {
			err = nil
		}
		d.base = last.N
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", Seqs, err)
	}
	return nil
}

// ended records in Seqs the last Seq of the deleted documents of outs that
// the relay's write removes, before it does.
func ended(ctx context.Context, db *mongo.Database, outs []outcome) error {
	for _, o := range outs {
		if !o.gone || !o.emptied() || o.last == 0 {
			continue
		}
		filter := bson.D{{Key: "_id", Value: o.key}}
		update := bson.D{{Key: "$max", Value: bson.D{{Key: "n", Value: o.last}}}}
		_, err := db.Collection(Seqs).UpdateOne(ctx, filter, update, options.Update().SetUpsert(true))
		if mongo.IsDuplicateKeyError(err) { // inserted meanwhile: update it
			_, err = db.Collection(Seqs).UpdateOne(ctx, filter, update)
		}
		if err != nil {
			return fmt.Errorf("recording the last Seq in %s: %w", Seqs, err)
		}
	}
	return nil
}
