package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// outcome is what a relay did with one document's events.
type outcome struct {
	id        any
	key       string           // its lease key, which names it in Seqs
	base      int64            // the Seq before its first event
	newBase   bool             // the document does not hold base yet
	last      int64            // the Seq of its last event
	read      []string         // the queue as read
	gone      bool             // the document is a tombstone
	delivered []string         // published
	done      []string         // published or moved to DeadLetters: a prefix of read
	size      map[string]int64 // bytes of each event done
	failed    string           // the event whose attempt failed, or ""
	retry     bson.D           // for it: $set of its tries and of its backoff (hold)
	undue     bool             // the removal ends the document's due time
}

// emptied reports whether the relay did all the work it read.
func (o *outcome) emptied() bool { return o.failed == "" && len(o.done) == len(o.read) }

// deliver publishes d's events, read in slot rs, in order while the lease
// holds, renewing it as it nears its end; before each publish it calls
// before with when the relay stops publishing for d.
func (r *Relay) deliver(ctx context.Context, coll *mongo.Collection, d pendingDoc, rs int64, before func(until time.Time) error) (out outcome, err error) {
	b := d.Box
	queue := distinct(b.Queue) // no writer queues an event twice: it is published once
	out = outcome{id: d.ID, key: d.key, base: d.base, newBase: b.Base == nil, last: d.base + b.Count,
		read: queue, gone: b.Gone, size: map[string]int64{}}
	defer func() { r.delivered.Add(int64(len(out.delivered))) }() // on every way out
	base := d.base + b.Count - int64(len(b.Queue))
	for i, evID := range queue {
		if ctx.Err() != nil {
			break
		}
		if !r.leases.valid(d.key, rs) { // a long queue: renew the lease, if it still holds
			if _, err := r.leases.renew(ctx, []leaseKey{{d.key, d.ID}}); err != nil {
				return out, err
			}
			if !r.leases.valid(d.key, rs) {
				break
			}
		}
		ev, ok := b.Events[evID]
		m := Message{ID: evID, Type: ev.Type, Source: coll.Name(), Subject: subject(d.ID), Tenant: tenant(d.raw, b.Tenant),
			Seq: base + int64(i) + 1, Time: ev.At.Time().UTC(), Data: ev.Data, Attempt: b.Tries[evID].N + 1}
		var err error
		if ok {
			until := r.leases.until(d.key)
			if err := before(until); err != nil {
				return out, err
			}
			if n, started := r.startPublish(); !started {
				return out, r.hungError(n)
			}
			err = r.publish(ctx, m, until)
		} else {
			err = errors.New("the event's body is missing from the document")
			m.Attempt = r.cfg.maxAttempts
		}
		if err == nil {
			out.delivered = append(out.delivered, evID)
		} else {
			if ctx.Err() != nil {
				break // stopped, not failed
			}
			r.failed.Add(1)
			if m.Attempt < r.cfg.maxAttempts && !undeliverable(err) {
				out.failed = evID
				out.retry = bson.D{
					{Key: path(partTries, evID), Value: tries{N: m.Attempt, Err: err.Error()}},
					{Key: path(partHold), Value: date(r.now().Add(min(max(r.cfg.backoff(m.Attempt), 0), maxHold)))},
				}
				break
			}
			if err := r.bury(ctx, m, err); err != nil {
				return out, err
			}
		}
		out.done = append(out.done, evID)
		out.size[evID] = int64(len(ev.Data) + len(ev.Type) + len(evID))
	}
	return out, nil
}

// distinct returns q without the repeats of an event ID, in order: q
// itself when it has none, with no allocation for a short queue.
func distinct(q []string) []string {
	if len(q) <= 16 {
		repeats := false
		for i := 1; i < len(q) && !repeats; i++ {
			repeats = slices.Contains(q[:i], q[i])
		}
		if !repeats {
			return q
		}
	}
	seen := make(map[string]bool, len(q))
	out := make([]string, 0, len(q))
	for _, e := range q {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// undeliverable reports whether err says that no attempt can deliver its
// message, which then moves to DeadLetters at once.
func undeliverable(err error) bool {
	return errors.Is(err, ErrUndeliverable) || errors.Is(err, ErrDataNotJSON)
}

// publish publishes m with a context that ends when the relay stops
// publishing for the document (until), and stops waiting for a Publish
// that does not return by then, so that a publish that hangs holds neither
// the document past its lease nor the relay's other documents. A Publish
// abandoned that way counts as a failed attempt; if it delivers after all,
// the message is published again later (consumers de-duplicate). It counts
// as hung until it returns. A panic in Publish is a failed attempt, with
// the panic as its error. The caller has counted the publish in
// r.running (see startPublish); publish uncounts it when Publish returns.
func (r *Relay) publish(ctx context.Context, m Message, until time.Time) error {
	ctx, cancel := r.withDeadline(ctx, until)
	defer cancel()
	done := make(chan error, 1)
	var state atomic.Int32 // waited for, returned, or abandoned
	go func() {
		var err error
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("Publish panicked: %v", v)
			}
			r.running.Add(-1)
			if !state.CompareAndSwap(waited, returned) {
				r.hung.Add(-1) // abandoned, and counted before: it returned at last
			}
			done <- err
		}()
		err = r.pub.Publish(ctx, m)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		r.hung.Add(1) // before the swap, so that Hung is never negative
		if !state.CompareAndSwap(waited, abandoned) {
			r.hung.Add(-1)
			return <-done // it returned meanwhile
		}
		return fmt.Errorf("the publish did not return before the lease's end: %w", context.Cause(ctx))
	}
}

// The states of a publish.
const (
	waited int32 = iota
	returned
	abandoned
)

// hungError is the error of a relay that starts no publish, n of its
// publishes running.
func (r *Relay) hungError(n int64) error {
	return fmt.Errorf("%w: %d publishes are running, as many as the relay runs at once (WithMaxHung), %d of them given up on at their deadline; Publish must return when its context ends",
		ErrPublishHung, n, r.hung.Load())
}

// canPublish returns hungError while MaxHungPublishes of the relay's
// publishes, given up on, have not returned, so that it claims no
// document it cannot deliver, which it would keep from the other relays
// while it renews its leases.
func (r *Relay) canPublish() error {
	if r.hung.Load() >= r.cfg.maxHung {
		return r.hungError(r.running.Load())
	}
	return nil
}

// startPublish counts a publish about to start in r.running, unless
// MaxHungPublishes of the relay's publishes are running already; then it
// returns how many.
func (r *Relay) startPublish() (int64, bool) {
	for {
		n := r.running.Load()
		if n >= r.cfg.maxHung {
			return n, false
		}
		if r.running.CompareAndSwap(n, n+1) {
			return n + 1, true
		}
	}
}
