package sequence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// store reserves blocks on the server.
type store interface {
	kind() Strategy
	// reserve reserves n numbers and returns the last; the block is
	// (last-n, last]. hint is the newest block end this process knows of.
	reserve(ctx context.Context, s *Sequence, hint, n int64) (last int64, err error)
	// current returns the last number reserved by anyone, start-1 if none.
	current(ctx context.Context, s *Sequence) (int64, error)
	// advance makes the last reserved number at least past; with force it
	// sets it to exactly past, even lower. It returns the last reserved
	// number it leaves, which is where this process's next claim may start.
	advance(ctx context.Context, s *Sequence, past int64, force bool) (int64, error)
}

// maxAttempts bounds the retries of racing first uses and claim walks.
const maxAttempts = 10000

type counterDoc struct {
	Seq int64 `bson:"seq"`
}

// atomicStore uses findOneAndUpdate {$inc}, atomic on MongoDB.
type atomicStore struct{ a *Allocator }

func (*atomicStore) kind() Strategy { return Atomic }

func (st *atomicStore) reserve(ctx context.Context, s *Sequence, _, n int64) (int64, error) {
	a := st.a
	for range maxAttempts {
		var doc counterDoc
		a.roundTrips.Add(1)
		err := a.counters.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: s.name}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "seq", Value: n}}}},
			options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc)
		if err == nil {
			if doc.Seq < n || doc.Seq < s.start-1+n {
				return 0, fmt.Errorf("counter %q is at %d after adding %d: %w", s.name, doc.Seq, n, ErrOverflow)
			}
			return doc.Seq, nil
		}
		if !errors.Is(err, mongo.ErrNoDocuments) {
			return 0, err
		}
		// First use: create the counter holding the first block. A racing
		// creator makes this a duplicate key; then $inc again.
		if s.start-1 > math.MaxInt64-n {
			return 0, fmt.Errorf("counter %q: start %d + %d: %w", s.name, s.start, n, ErrOverflow)
		}
		last := s.start - 1 + n
		a.roundTrips.Add(1)
		_, err = a.counters.InsertOne(ctx, bson.D{{Key: "_id", Value: s.name}, {Key: "seq", Value: last}})
		if err == nil {
			return last, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return 0, err
		}
	}
	return 0, fmt.Errorf("counter %q: no block after %d attempts", s.name, maxAttempts)
}

func (st *atomicStore) current(ctx context.Context, s *Sequence) (int64, error) {
	var doc counterDoc
	st.a.roundTrips.Add(1)
	err := st.a.counters.FindOne(ctx, bson.D{{Key: "_id", Value: s.name}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return s.start - 1, nil
	}
	return doc.Seq, err
}

func (st *atomicStore) advance(ctx context.Context, s *Sequence, past int64, force bool) (int64, error) {
	op := "$max"
	if force {
		op = "$set"
	}
	for range maxAttempts {
		var doc counterDoc
		st.a.roundTrips.Add(1)
		err := st.a.counters.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: s.name}},
			bson.D{{Key: op, Value: bson.D{{Key: "seq", Value: past}}}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
		if !mongo.IsDuplicateKeyError(err) {
			return doc.Seq, err
		}
	}
	return 0, fmt.Errorf("counter %q: not advanced after %d attempts", s.name, maxAttempts)
}

// claimStore settles each block by inserting a claim document whose _id is
// "<name>#<first number>". Claims form a chain: a block starts right after
// the one before it, and the unique _id lets one process win each place in
// the chain. The counter document only hints where the chain ends.
type claimStore struct{ a *Allocator }

type claimDoc struct {
	ID  string `bson:"_id"`
	Seq string `bson:"seq"`
	Lo  int64  `bson:"lo"`
	Hi  int64  `bson:"hi"`
}

func (*claimStore) kind() Strategy { return Claim }

func claimID(name string, lo int64) string { return name + "#" + strconv.FormatInt(lo, 10) }

// hint returns where to start walking: the newer of the process's own hint
// and the counter document.
func (st *claimStore) hint(ctx context.Context, s *Sequence, own int64) (int64, error) {
	var doc counterDoc
	st.a.roundTrips.Add(1)
	err := st.a.counters.FindOne(ctx, bson.D{{Key: "_id", Value: s.name}}).Decode(&doc)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, err
	}
	return max(own, doc.Seq, s.start-1), nil
}

// claim walks the chain from h and inserts a claim of [end+1, end+n] at its
// end, or of [end+1, upTo] when upTo > 0. It returns the claim's last
// number, or, when upTo > 0 and the chain already reaches upTo, the chain's
// end.
func (st *claimStore) claim(ctx context.Context, s *Sequence, h, n, upTo int64) (int64, error) {
	a := st.a
	jumped := false
	for range maxAttempts {
		lo := h + 1
		if upTo > 0 {
			if h >= upTo {
				return h, nil
			}
			n = upTo - h
		}
		if lo > math.MaxInt64-n+1 {
			return 0, fmt.Errorf("counter %q: %d + %d: %w", s.name, lo, n, ErrOverflow)
		}
		hi := lo + n - 1
		a.roundTrips.Add(1)
		_, err := a.claims.InsertOne(ctx, claimDoc{ID: claimID(s.name, lo), Seq: s.name, Lo: lo, Hi: hi})
		if err == nil {
			// At most one hint write a second per sequence: it contends
			// with the application's writes, and a newcomer walks at most
			// a second's worth of claims from a stale hint.
			if now := time.Now().UnixNano(); now-s.hintAt.Load() >= int64(time.Second) {
				s.hintAt.Store(now)
				go st.moveHint(s.name, hi)
			}
			return hi, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return 0, err
		}
		// Someone holds this place: on the first collision jump to the
		// shared hint, then step past their block.
		if !jumped {
			jumped = true
			if hh, err := st.hint(ctx, s, h); err == nil && hh > h {
				h = hh
				continue
			}
		}
		var c claimDoc
		a.roundTrips.Add(1)
		err = a.claims.FindOne(ctx, bson.D{{Key: "_id", Value: claimID(s.name, lo)}}).Decode(&c)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return 0, err
		}
		if err == nil {
			h = c.Hi
		}
	}
	return 0, fmt.Errorf("counter %q: no free place in the claim chain after %d attempts", s.name, maxAttempts)
}

func (st *claimStore) reserve(ctx context.Context, s *Sequence, own, n int64) (int64, error) {
	h := own
	if own < s.start {
		// No block of our own yet: start from the shared hint.
		var err error
		if h, err = st.hint(ctx, s, own); err != nil {
			return 0, err
		}
	}
	return st.claim(ctx, s, h, n, 0)
}

func (st *claimStore) current(ctx context.Context, s *Sequence) (int64, error) {
	h, err := st.hint(ctx, s, s.start-1)
	if err != nil {
		return 0, err
	}
	for range maxAttempts {
		var c claimDoc
		st.a.roundTrips.Add(1)
		err := st.a.claims.FindOne(ctx, bson.D{{Key: "_id", Value: claimID(s.name, h+1)}}).Decode(&c)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return h, nil
		}
		if err != nil {
			return 0, err
		}
		h = c.Hi
	}
	return 0, fmt.Errorf("counter %q: claim chain longer than %d", s.name, maxAttempts)
}

func (st *claimStore) advance(ctx context.Context, s *Sequence, past int64, force bool) (int64, error) {
	end, err := st.current(ctx, s)
	if err != nil {
		return 0, err
	}
	if force && past < end {
		return 0, fmt.Errorf("counter %q: lowering it from %d to %d would break the claim chain: %w", s.name, end, past, ErrUnsupported)
	}
	// The chain's end, never past itself: past+1 is a place in the chain
	// only if a claim ends at past.
	return st.claim(ctx, s, end, 0, past)
}

// moveHint raises the counter document to hi, in the background: it only
// spares processes that start later a walk along the chain, so nobody waits
// for it and its failure is harmless.
func (st *claimStore) moveHint(name string, hi int64) {
	a := st.a
	ctx, cancel := a.detach()
	defer cancel()
	a.hintWrites.Add(1)
	if _, err := a.counters.UpdateOne(ctx, bson.D{{Key: "_id", Value: name}},
		bson.D{{Key: "$max", Value: bson.D{{Key: "seq", Value: hi}}}}, options.Update().SetUpsert(true)); err != nil {
		a.cfg.logger.Debug("sequence: moving the hint failed", "sequence", name, "err", err)
	}
}
