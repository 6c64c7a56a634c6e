package outbox

import (
	"context"
	"errors"
	"fmt"
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

// deliver publishes d's events in order while the lease holds.
func (r *Relay) deliver(ctx context.Context, coll *mongo.Collection, d pendingDoc) (outcome, error) {
	b := d.Box
	out := outcome{id: d.ID, key: d.key, base: d.base, newBase: b.Base == nil, last: d.base + b.Count,
		read: b.Queue, gone: b.Gone, size: map[string]int64{}}
	base := d.base + b.Count - int64(len(b.Queue))
	for i, evID := range b.Queue {
		if !r.leases.valid(d.key) || ctx.Err() != nil {
			break
		}
		if n := r.hung.Load(); n >= r.cfg.maxHung {
			r.delivered.Add(int64(len(out.delivered)))
			return out, fmt.Errorf("%w: %d of them; Publish must return when its context ends", ErrPublishHung, n)
		}
		ev, ok := b.Events[evID]
		m := Message{ID: evID, Type: ev.Type, Source: coll.Name(), Subject: subject(d.ID), Tenant: tenant(d.raw, b.Tenant),
			Seq: base + int64(i) + 1, Time: ev.At.Time().UTC(), Data: ev.Data, Attempt: b.Tries[evID].N + 1}
		var err error
		if ok {
			err = r.publish(ctx, m, r.leases.until(d.key))
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
			if m.Attempt < r.cfg.maxAttempts {
				out.failed = evID
				out.retry = bson.D{
					{Key: path(partTries, evID), Value: tries{N: m.Attempt, Err: err.Error()}},
					{Key: path(partHold), Value: date(time.Now().Add(r.cfg.backoff(m.Attempt)))},
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
	r.delivered.Add(int64(len(out.delivered)))
	return out, nil
}

// publish publishes m with a context that ends when the relay stops
// publishing for the document (until), and stops waiting for a Publish
// that does not return by then, so that a publish that hangs holds neither
// the document past its lease nor the relay's other documents. A Publish
// abandoned that way counts as a failed attempt; if it delivers after all,
// the message is published again later (consumers de-duplicate). It counts
// as hung until it returns.
func (r *Relay) publish(ctx context.Context, m Message, until time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	done := make(chan error, 1)
	var state atomic.Int32 // running, returned, or abandoned
	go func() {
		err := r.pub.Publish(ctx, m)
		if !state.CompareAndSwap(running, returned) {
			r.hung.Add(-1) // abandoned: it returned at last
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if !state.CompareAndSwap(running, abandoned) {
			return <-done // it returned meanwhile
		}
		r.hung.Add(1)
		return fmt.Errorf("the publish did not return before the lease's end: %w", context.Cause(ctx))
	}
}

// The states of a publish.
const (
	running int32 = iota
	returned
	abandoned
)
