package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

// A lease is a document of Leases whose unique _id names a document and a
// time slot: "<collection>|<_id>@<slot>", slot being the Unix time in
// nanoseconds divided by the lease duration, which every relay of the
// database shares (see agree). Inserting it gives the
// inserter the document for that slot, on every server, since only the
// unique index decides. Nothing is ever updated, so FerretDB's non-atomic
// updates do not matter, and an expired lease needs no takeover: the next
// slot is a new _id. The holder of a slot claims the next one too once a
// third of it is over (see claim, renew), so that it keeps documents it is
// still working on;
// it starts a publish only until half the lease before its last slot ends
// (see margin), stops publishing a third of the lease before, and removes
// what it published before the slot ends (see spare). A relay that claims
// a slot thus holds, from its claim on, a sixth of the lease or more in
// which to start publishing.

// lengthID is the _id of the document of Leases that holds the lease
// length every relay of the database uses (see agree).
const lengthID = "length"

// agree makes sure that every relay of the database leases for as long as
// this one: the first relay records its length in Leases, and a relay
// with another length is refused, since slots of other lengths have other
// _ids, so that two relays could hold one document at once. It reads
// again at every Drain (one read by _id), so that the document, deleted
// while no relay runs, takes a new length. A document that holds no
// length a relay writes refuses every relay too, saying so.
func (l *leases) agree(ctx context.Context) error {
	byID := bson.D{{Key: "_id", Value: lengthID}}
	raw, err := l.coll.FindOne(ctx, byID).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		_, err = l.coll.InsertOne(ctx, lengthDoc{ID: lengthID, Nanos: int64(l.d)})
		if err == nil {
			return nil
		}
		if mongo.IsDuplicateKeyError(err) { // another relay recorded it first
			raw, err = l.coll.FindOne(ctx, byID).Raw()
		}
	}
	if err != nil {
		return fmt.Errorf("outbox: reading the relays' lease length in %s: %w", l.coll.Name(), err)
	}
	ns, ok := raw.Lookup("ns").Int64OK()
	if d := time.Duration(ns); !ok || d < minLease || d > maxLease {
		return fmt.Errorf("%w: document %q of %s holds no lease length a relay writes (an int64 of nanoseconds, %v to %v, in ns); stop every relay and delete that document",
			ErrInvalidRelay, lengthID, l.coll.Name(), minLease, maxLease)
	}
	if time.Duration(ns) != l.d {
		return fmt.Errorf("%w: WithLease(%v), but the relays of this database lease for %v (document %q of %s): relays with other lengths could hold one document at once, so each must lease for as long; to change it, stop every relay and delete that document",
			ErrInvalidRelay, l.d, time.Duration(ns), lengthID, l.coll.Name())
	}
	return nil
}

// lengthDoc is that document.
type lengthDoc struct {
	ID    string `bson:"_id"`
	Nanos int64  `bson:"ns"`
}

// leaseDoc is a lease as stored.
type leaseDoc struct {
	ID    string             `bson:"_id"`
	By    string             `bson:"by"`
	Until primitive.DateTime `bson:"until"`
}

// held is the run of slots a relay holds on one document.
type held struct{ from, to int64 }

type leases struct {
	coll  *mongo.Collection
	by    string
	d     time.Duration
	clock Clock

	mu        sync.Mutex
	held      map[string]held
	taken     map[string]taken  // documents other relays hold
	done      map[string]uint64 // documents the relay's Drains worked on, by stamp (see openRead)
	reads     map[uint64]int    // the open reads, by ticket
	open      int               // how many reads are open
	ticks     uint64
	lastPrune time.Time
}

func newLeases(coll *mongo.Collection, by string, d time.Duration, clock Clock) *leases {
	return &leases{coll: coll, by: by, d: d, clock: clock, held: map[string]held{}, taken: map[string]taken{}, done: map[string]uint64{}, reads: map[uint64]int{}}
}

func (l *leases) slot(t time.Time) int64 { return t.UnixNano() / int64(l.d) }
func (l *leases) end(s int64) time.Time  { return time.Unix(0, (s+1)*int64(l.d)) }

// until returns when the relay stops publishing for key.
func (l *leases) until(key string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end(l.held[key].to).Add(-l.spare())
}

// spare is how long before its lease ends a relay stops publishing, so
// that its removal of what it published lands while it still holds the
// document, and no other relay publishes that again.
func (l *leases) spare() time.Duration { return l.d / 3 }

// margin is the least time a publish has before until: a relay starts
// one only while it has that left, so that a publish the server is slow to
// acknowledge is rarely cut short by the deadline, which would count it as
// failed, and publish it again, though it went through.
func (l *leases) margin() time.Duration { return l.d / 6 }

// holds reports whether h lets the relay start a publish at now, of slot s.
func (l *leases) holds(h held, now time.Time, s int64) bool {
	return s >= h.from && s <= h.to && now.Before(l.end(h.to).Add(-l.spare()-l.margin()))
}

// window is how long a claim made at now lets the relay start publishing:
// until the end of its slot, or of the next one, which a claim late in a
// slot takes too (see claim), less spare and margin.
func (l *leases) window(now time.Time) time.Duration {
	s := l.slot(now)
	if now.After(l.end(s).Add(-2 * l.d / 3)) {
		s++
	}
	return max(l.end(s).Add(-l.spare()-l.margin()).Sub(now), 0)
}

// valid reports whether the relay may start a publish for key now, from
// a read in slot rs: it holds key now, in a run of slots unbroken since
// rs. A run that starts later was claimed from a later read, by another
// Drain; another relay may have held key in between.
func (l *leases) valid(key string, rs int64) bool {
	l.mu.Lock()
	h, ok := l.held[key]
	l.mu.Unlock()
	now := l.clock.Now()
	return ok && h.from <= rs && l.holds(h, now, l.slot(now))
}

// claim claims keys, read at read, for the current slot and, in its last
// two thirds, the next slot of those it then holds; it returns those the
// relay holds now. Only the holder of a document's current slot claims
// its next one, so that no relay takes the next slot of a document
// another works on, which would end the other's work there. A document
// read in an earlier slot, readSlots−1 slots ago at most, is claimed for
// every slot since the read that the relay does not hold, in the same
// write: had another relay held it in one of them, it could have
// delivered from it after the read, and what was read would be stale;
// the server then refuses that lease, and the relay leaves the document.
// So does a document the relay holds from a slot after the read's only
// (claimed from a later read): another relay may have held it between.
// An older read claims nothing, whenever the caller checked its age: the
// caller reads again.
func (l *leases) claim(ctx context.Context, keys []leaseKey, read time.Time) (map[string]bool, error) {
	now := l.clock.Now()
	s, rs := l.slot(now), l.slot(read)
	if !l.lasts(rs, now) {
		return map[string]bool{}, nil
	}
	var wants []want
	l.mu.Lock()
	for _, k := range keys {
		h, ok := l.held[k.key]
		if ok && h.to < rs {
			ok = false // a hold before the read tells nothing of since
		}
		if t, other := l.taken[k.key]; (ok && (h.to >= s || h.from > rs)) || (other && t.slot >= s) {
			continue
		}
		from := rs
		if ok {
			from = h.to + 1
		}
		for slot := from; slot <= s; slot++ {
			wants = append(wants, want{k.key, k.id, slot})
		}
	}
	l.mu.Unlock()
	if err := l.insert(ctx, wants, false, s); err != nil {
		return nil, err
	}
	if now.After(l.end(s).Add(-2 * l.d / 3)) {
		wants = wants[:0]
		l.mu.Lock()
		for _, k := range keys {
			if h, ok := l.held[k.key]; ok && h.to == s && h.from <= rs {
				wants = append(wants, want{k.key, k.id, s + 1})
			}
		}
		l.mu.Unlock()
		if err := l.insert(ctx, wants, true, s); err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for _, k := range keys {
		if h, ok := l.held[k.key]; ok && h.from <= rs && l.holds(h, now, s) {
			out[k.key] = true
		}
	}
	return out, nil
}

// readSlots is how many slots a read claims in: its own and the next.
// Each slot after the read's costs a lease per document claimed then (see
// claim).
const readSlots = 2

// lasts reports whether a read made in slot rs may still claim at now.
func (l *leases) lasts(rs int64, now time.Time) bool { return l.slot(now) <= rs+readSlots-1 }

// want is a slot of a document a relay claims.
type want struct {
	key  string
	id   any
	slot int64
}

// renew claims the next slot of those of keys the relay holds now, so
// that it keeps them while it works: once a third of the current slot is
// over, claim asks for the next one (one write for all of them). A key
// whose lease has lapsed is not claimed again here: another relay may
// have worked on its document meanwhile, so what the relay read of it is
// stale; a later read claims it afresh. It reports whether the relay may
// start a publish for each key now.
func (l *leases) renew(ctx context.Context, keys []leaseKey) (map[string]bool, error) {
	s := l.slot(l.clock.Now())
	l.mu.Lock()
	var held []leaseKey
	for _, k := range keys {
		if h, ok := l.held[k.key]; ok && h.to >= s {
			held = append(held, k)
		}
	}
	l.mu.Unlock()
	if len(held) == 0 {
		return map[string]bool{}, nil
	}
	return l.claim(ctx, held, l.clock.Now())
}

// pruneEvery is how many lease durations pass between two deletions of
// old lease documents by one relay: each is a write that, on FerretDB,
// scans every lease, while relays that share a backlog wait on the
// server's one writer.
const pruneEvery = 10

// prune forgets expired leases and, once every pruneEvery lease
// durations, deletes the relay's and others' lease documents of slots
// long past, which no relay inserts again; it reports whether it did.
func (l *leases) prune(ctx context.Context) bool {
	now := l.clock.Now()
	s := l.slot(now)
	l.mu.Lock()
	for k, h := range l.held {
		if h.to < s {
			delete(l.held, k)
		}
	}
	for k, t := range l.taken {
		if t.slot < s {
			delete(l.taken, k)
		}
	}
	due := now.Sub(l.lastPrune) >= pruneEvery*l.d
	if due {
		l.lastPrune = now
	}
	l.mu.Unlock()
	if due {
		_, _ = l.coll.DeleteMany(ctx, staleLeases(now, l.d))
	}
	return due
}

// staleLeases selects the documents of Leases that no relay holds at now,
// by a clock within pruneEvery leases of now: those of slots that ended
// pruneEvery leases ago, and those no relay writes, of slots that far
// ahead or with no end.
func staleLeases(now time.Time, d time.Duration) bson.D {
	old, ahead := date(now.Add(-pruneEvery*d)), date(now.Add(pruneEvery*d))
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: lengthID}}}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "until", Value: bson.D{{Key: "$lt", Value: old}}}},
		bson.D{{Key: "until", Value: bson.D{{Key: "$gt", Value: ahead}}}},
		bson.D{{Key: "until", Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$type", Value: "date"}}}}}},
		bson.D{{Key: "until", Value: bson.D{{Key: "$type", Value: "array"}}}},
	}}}
}
