package repo

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// A claim is needed only while its write is under way: once the document
// has moved past the version, a writer that claims it again fails on the
// version filter. So the claim of a successful write is not deleted on the
// caller's path but queued, and a goroutine that runs while the queue is
// not empty deletes it in batches, one command per batch. At rest no claim
// stays, so "<collection>.versions" holds only the claims of the last
// batch, and one command deletes them all cheaply even where {_id: {$in}}
// is a scan (FerretDB). The same command deletes the claims older than
// sweepStale, which a process that exited before its batch left behind.

const (
	sweepEvery = 100 * time.Millisecond // how long the keys of a batch gather
	sweepBatch = 1000                   // the most keys one command names
	sweepStale = 2 * staleClaim         // older claims are deleted with any batch
	sweepLimit = 30 * time.Second       // one command's timeout
)

// claimSweeper deletes claims in the background, in batches.
type claimSweeper struct {
	claims *mongo.Collection
	mu     sync.Mutex
	keys   []string
	busy   bool // a goroutine is sweeping
}

// add queues the claim key for deletion.
func (s *claimSweeper) add(key string) {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	start := !s.busy
	s.busy = true
	s.mu.Unlock()
	if start {
		go s.run()
	}
}

// run deletes what was queued, a batch at a time, until a wait brings
// nothing new.
func (s *claimSweeper) run() {
	for {
		time.Sleep(sweepEvery)
		s.mu.Lock()
		keys := s.keys[:min(len(s.keys), sweepBatch)]
		s.keys = s.keys[len(keys):]
		if len(keys) == 0 {
			s.keys, s.busy = nil, false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), sweepLimit)
		_, err := s.claims.DeleteMany(ctx, bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: keys}}}},
			bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: time.Now().Add(-sweepStale)}}}},
		}}})
		cancel()
		if err != nil {
			slog.Debug("repo: deleting version claims failed; they stay behind, harmless", "collection", s.claims.Name(), "claims", len(keys), "err", err)
		}
	}
}
