package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// taken is a document another relay holds: the last slot of it this relay
// found taken, and the document's _id. The relay does not claim that slot
// again, and leaves the document out of its reads until the slot is over,
// so that relays sharing a backlog neither write claims that cannot
// succeed nor read again what they cannot take.
type taken struct {
	slot int64
	id   any
}

// leaseKey is a document a relay claims: its lease key and its _id.
type leaseKey struct {
	key string
	id  any
}

// insert inserts the leases of wants in ordered writes of at most
// insertBatch, and records those the relay got and the one another relay
// holds, at which the server stopped. The leases after it are claimed
// next when rest is set (the next slots of documents the relay holds,
// which others rarely hold); otherwise they are left for a later claim.
// Ordered writes cost FerretDB, which inserts the documents of a write one
// by one once one of them is a duplicate, one transaction per lease up to
// the first duplicate instead of one per lease of the write.
//
// A lease refused for a slot before now, the current slot, counts as
// taken for the current one: the document's holder then may hold it
// still, and what the relay read of it may be stale.
func (l *leases) insert(ctx context.Context, wants []want, rest bool, now int64) error {
	for len(wants) > 0 {
		part := wants[:min(len(wants), insertBatch)]
		stop, err := l.insertOrdered(ctx, part)
		if err != nil {
			return err
		}
		if stop == len(part) {
			l.record(part, nil)
			wants = wants[len(part):]
			continue
		}
		lost := part[stop]
		lost.slot = max(lost.slot, now)
		l.record(part[:stop], []want{lost})
		if !rest {
			return nil
		}
		wants = wants[stop+1:]
	}
	return nil
}

// insertBatch is how many leases go in one ordered write: FerretDB
// splits a larger one into batches of 100 and goes on with the next
// batch after a duplicate, so that an ordered write of more would insert
// leases after the one it stopped at.
const insertBatch = 100

// insertOrdered inserts the leases of wants in one ordered write and
// returns the index of the first that another relay holds, len(wants)
// when the relay got all.
func (l *leases) insertOrdered(ctx context.Context, wants []want) (int, error) {
	docs := make([]any, len(wants))
	for i, w := range wants {
		docs[i] = leaseDoc{ID: w.key + "@" + strconv.FormatInt(w.slot, 10), By: l.by, Until: date(l.end(w.slot))}
	}
	_, err := l.coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(true))
	var bwe mongo.BulkWriteException
	if err == nil || !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		if err != nil {
			return 0, fmt.Errorf("claiming leases: %w", err)
		}
		return len(wants), nil
	}
	stop := len(wants)
	for _, we := range bwe.WriteErrors {
		if !mongo.IsDuplicateKeyError(we) {
			return 0, fmt.Errorf("claiming leases: %w", err)
		}
		stop = min(stop, we.Index)
	}
	return stop, nil
}

// record records that the relay got the leases of got and that other
// relays hold those of others.
func (l *leases) record(got, others []want) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range others {
		if t := l.taken[w.key]; t.slot < w.slot {
			l.taken[w.key] = taken{slot: w.slot, id: w.id}
		}
	}
	for _, w := range got {
		delete(l.taken, w.key)
		h, ok := l.held[w.key]
		switch {
		case !ok || h.to < w.slot-1:
			h = held{from: w.slot, to: w.slot}
		case w.slot > h.to:
			h.to = w.slot
		}
		l.held[w.key] = h
	}
}

// isTaken reports whether another relay holds key now, as far as this
// relay knows.
func (l *leases) isTaken(key string) bool {
	s := l.slot(l.clock.Now())
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.taken[key]
	return ok && t.slot >= s
}

// elsewhere returns the _ids of the documents whose keys start with
// prefix that another relay holds now, as far as this relay knows, at
// most limit of them.
func (l *leases) elsewhere(prefix string, limit int) bson.A {
	s := l.slot(l.clock.Now())
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids bson.A
	for k, t := range l.taken {
		if len(ids) < limit && t.slot >= s && t.id != nil && strings.HasPrefix(k, prefix) {
			ids = append(ids, t.id)
		}
	}
	return ids
}

// A lease tells relays apart, not the Drains of one relay, which share
// its leases: so that a Drain does not publish from a read older than
// another Drain's work on a document, the relay stamps each document its
// Drains finish working on, from one counter, and a Drain leaves a
// document stamped after the ticket it took before its read (see work).
// A stamp is kept while a read with an earlier ticket is open.

// openRead returns a ticket for a read about to be sent, the counter's value
// now: a document stamped later may have changed since the read. The
// read stays open until closeRead.
func (l *leases) openRead() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads[l.ticks]++
	l.open++
	return l.ticks
}

// closeRead closes a read opened with ticket t, and forgets the stamps no
// open read is older than.
func (l *leases) closeRead(t uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reads[t]--; l.reads[t] <= 0 {
		delete(l.reads, t)
	}
	if l.open--; l.open == 0 {
		clear(l.done)
		return
	}
	oldest := l.ticks
	for t := range l.reads {
		oldest = min(oldest, t)
	}
	for k, stamp := range l.done {
		if stamp <= oldest {
			delete(l.done, k)
		}
	}
}

// finished stamps keys, which a Drain of the relay is done working on,
// while a read is open.
func (l *leases) finished(keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == 0 {
		return
	}
	for _, k := range keys {
		l.ticks++
		l.done[k] = l.ticks
	}
}

// since reports whether a Drain of the relay finished working on key
// after the read of ticket t was sent.
func (l *leases) since(key string, t uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done[key] > t
}
