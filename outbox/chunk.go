package outbox

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// A relay claims what it read a chunk at a time, each no larger than what
// it delivers within the lease a claim made now gives it, at the pace it
// measured (see chunkSize): so it holds no document it cannot reach
// before its lease ends, and relays that share a backlog share it to its
// end instead of one holding most of it while the others wait. It claims
// from one read during the read's slot and the next one (readSlots; see
// claim, which then claims the read's slot as well, so that what it
// delivers is never older than the work of the relay that held the
// document before), and reads again after that. The chunks go through the
// read oldest due first; after a chunk that collided with another relay's
// claims, the next starts at a random place in the rest, so that relays
// that read the same documents go different ways through them, and after
// maxCollisions such chunks the relay reads again, or, when it claims
// other relays' shares, leaves the rest to them (see drain).

// readBatch is what the chunks of one read share.
type readBatch struct {
	coll    *mongo.Collection
	atomic  bool
	slot    int64                           // the read's slot
	ticket  uint64                          // taken before the read (see leases.openRead)
	held    *[]string                       // what the chunk works on, which the relay's other Drains skip
	others  *bson.A                         // documents others hold, left out of the next read
	release func()                          // forgets held
	ours    func([]pendingDoc) []pendingDoc // what falls to the relay now of the rest, nil when it takes all
}

// maxCollisions is how many chunks of one read may collide with other
// relays' claims before the relay reads again: each collision shows one
// document that another relay holds, a read every document that others
// have delivered since.
const maxCollisions = 4

// firstChunk is how many documents a relay claims at once before it has
// measured its pace.
const firstChunk = 10

// chunks claims and delivers docs, read at readAt, chunk by chunk; it
// returns how many documents it worked on and how many messages it
// delivered, and whether it went through all of docs (fresh) or stopped,
// for a new read, because the last slot a read of readAt claims in is
// over or its chunks collided maxCollisions times.
func (r *Relay) chunks(ctx context.Context, b *readBatch, docs []pendingDoc, readAt time.Time) (worked, total int, fresh bool, err error) {
	slot := r.leases.slot(readAt)
	at := 0 // oldest due first, until a chunk collides
	collided := 0
	for len(docs) > 0 {
		now := r.now()
		if !r.leases.lasts(slot, now) {
			return worked, total, false, nil
		}
		docs = append(docs[at:], docs[:at]...)
		if b.ours != nil { // a relay that joined since the read takes its share
			if docs = b.ours(docs); len(docs) == 0 {
				break
			}
		}
		chunk := docs[:min(r.chunkSize(now), len(docs))]
		docs = docs[len(chunk):]
		keys := make([]leaseKey, len(chunk))
		for i, d := range chunk {
			keys[i] = leaseKey{d.key, d.ID}
		}
		if err := r.canPublish(); err != nil {
			return worked, total, true, err
		}
		mine, err := r.leases.claim(ctx, keys, readAt)
		if err != nil {
			return worked, total, true, err
		}
		chunk, docs = r.unclaimed(chunk, docs, mine)
		if err := r.bases(ctx, chunk, mine); err != nil {
			return worked, total, true, err
		}
		start := r.now()
		w, n, err := r.work(ctx, b, chunk, mine)
		worked, total = worked+w, total+n
		b.release()
		if err != nil {
			return worked, total, true, err
		}
		r.measure(start, w)
		at = 0
		if len(mine) < len(keys) && len(docs) > 0 { // collided
			if collided++; collided >= maxCollisions {
				return worked, total, false, nil // what is left is mostly others': read again
			}
			at = r.cfg.place(len(docs))
		}
	}
	return worked, total, true, nil
}

// unclaimed moves from chunk back to docs the documents that the claim
// of chunk left unclaimed, neither the relay's nor known to be another's
// (the server stopped at a lease another relay holds, before them).
func (r *Relay) unclaimed(chunk, docs []pendingDoc, mine map[string]bool) (kept, rest []pendingDoc) {
	for _, d := range chunk {
		if mine[d.key] || r.leases.isTaken(d.key) {
			kept = append(kept, d)
		} else {
			docs = append(docs, d)
		}
	}
	return kept, docs
}

// chunkSize is how many documents the relay claims at once at now: as
// many as it delivers, at its measured pace, in the time a claim made now
// lets it start publishing, within [1, WithBatch].
func (r *Relay) chunkSize(now time.Time) int {
	pace := time.Duration(r.pace.Load())
	if pace <= 0 {
		return min(firstChunk, r.cfg.batch)
	}
	return int(min(max(r.leases.window(now)/pace, 1), time.Duration(r.cfg.batch)))
}

// measure adds the pace of a chunk of worked documents, begun at start,
// to the relay's measure: a moving average, a quarter of it the latest
// chunk's.
func (r *Relay) measure(start time.Time, worked int) {
	if worked == 0 {
		return
	}
	d := int64(r.now().Sub(start)) / int64(worked)
	for {
		old := r.pace.Load()
		next := d
		if old > 0 {
			next = (3*old + d) / 4
		}
		if r.pace.CompareAndSwap(old, max(next, 1)) {
			return
		}
	}
}
