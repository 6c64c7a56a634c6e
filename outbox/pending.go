package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// countPending counts the undelivered events of colls, and finds when the
// oldest of them was recorded, at most every ten seconds. It reads only
// the queued IDs of the documents with work: an event's ID is a UUIDv7,
// which holds the millisecond it was recorded, so the smallest ID is the
// oldest event. A count that fails keeps the last one.
func (r *Relay) countPending(ctx context.Context, colls []string) {
	now := r.now().UnixNano()
	last := r.lastPending.Load()
	if last != 0 && now-last < int64(r.cfg.countEvery) || !r.lastPending.CompareAndSwap(last, now) {
		return // counted lately, or another Drain of this relay counts now
	}
	var n int64
	var oldest string
	for _, c := range colls {
		cur, err := r.db.Collection(c).Find(ctx, bson.D{{Key: path(partDue), Value: bson.D{{Key: "$exists", Value: true}}}},
			options.Find().SetProjection(bson.D{{Key: path(partQueue), Value: 1}}))
		if err != nil {
			return
		}
		for cur.Next(ctx) {
			q, ok := cur.Current.Lookup(Field, partQueue).ArrayOK()
			if !ok {
				continue
			}
			ids, _ := q.Values()
			for _, v := range ids {
				n++
				if id, ok := v.StringValueOK(); ok && (oldest == "" || id < oldest) {
					oldest = id
				}
			}
		}
		err = cur.Err()
		_ = cur.Close(ctx)
		if err != nil {
			return
		}
	}
	var at int64
	if u, err := uuid.Parse(oldest); err == nil && u.Version() == 7 {
		sec, nsec := u.Time().UnixTime()
		at = time.Unix(sec, nsec).UnixMilli()
	}
	r.pending.Store(n)
	r.oldest.Store(at)
	r.counted.Store(now)
}
