package repo

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// A claim is needed only while its write is under way: once the document
// has moved past a version, a writer that claims that version again fails
// on the version filter. So the claim before a successful write is not
// deleted on the caller's path but queued, and the queue is deleted in
// batches, one command each, by a goroutine that runs while there is
// something to delete. Claims queued by a process that exits before the
// next batch stay behind, harmless.

const (
	sweepEvery = 100 * time.Millisecond // how long the keys of a batch gather
	sweepBatch = 1000                   // the most keys one command deletes
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
		// One delete per key, all in one command: a filter that is {_id}
		// alone uses the _id index even on FerretDB, where {_id: {$in}}
		// would scan every claim of the collection.
		dels := make([]mongo.WriteModel, len(keys))
		for i, k := range keys {
			dels[i] = mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: k}})
		}
		ctx, cancel := context.WithTimeout(context.Background(), sweepLimit)
		_, err := s.claims.BulkWrite(ctx, dels, options.BulkWrite().SetOrdered(false))
		cancel()
		if err != nil {
			slog.Debug("repo: deleting version claims failed; they stay behind, harmless", "collection", s.claims.Name(), "claims", len(keys), "err", err)
		}
	}
}
