package sequence

import (
	"context"
	"errors"
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// store reserves blocks on the server.
type store interface {
	kind() Strategy
	// reserve reserves n numbers; the block is (m.end-n, m.end]. own is
	// the newest reservation this process knows of.
	reserve(ctx context.Context, s *Sequence, own mark, n int64) (mark, error)
	// current returns the last number reserved by anyone, start-1 if none.
	current(ctx context.Context, s *Sequence) (int64, error)
	// advance makes the last reserved number at least past; with force it
	// sets it to exactly past, even lower. It returns the place it leaves,
	// which is where this process's next reservation may start.
	advance(ctx context.Context, s *Sequence, past int64, force bool) (mark, error)
	// giveBack returns the numbers [from, last.end] of the block last, the
	// newest reservation, if nobody has reserved after it. It reports
	// whether it did.
	giveBack(ctx context.Context, s *Sequence, last mark, from int64) (bool, error)
}

// mark is a place in a sequence: the last number of a reservation and, for
// Claim, the version of the claim that made it; for Atomic, the number of
// admin moves of the counter seen then (see atomicStore.giveBack).
type mark struct{ end, ver int64 }

// newer reports whether m is a later reservation than o.
func (m mark) newer(o mark) bool { return m.ver > o.ver || (m.ver == o.ver && m.end > o.end) }

// maxAttempts bounds the retries of racing first uses and claim walks.
const maxAttempts = 10000

type counterDoc struct {
	Seq   int64 `bson:"seq"`
	Moves int64 `bson:"moves"` // admin moves (AdvancePast, SetNext); absent until the first
	Gate  int64 `bson:"gate"`  // while present, the Claim strategy serves (see handover.go)
}

// atomicStore uses findOneAndUpdate {$inc}, atomic on MongoDB.
type atomicStore struct{ a *Allocator }

func (*atomicStore) kind() Strategy { return Atomic }

func (st *atomicStore) reserve(ctx context.Context, s *Sequence, _ mark, n int64) (mark, error) {
	if err := st.check(ctx, s); err != nil {
		return mark{}, err
	}
	return st.inc(ctx, s, n)
}

func (st *atomicStore) inc(ctx context.Context, s *Sequence, n int64) (mark, error) {
	a := st.a
	missed := false // the counter was there, but with the gate closed
	var r rivalry
	for range maxAttempts {
		var doc counterDoc
		s.roundTrips.Add(1)
		err := a.counters.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: s.name}, gateOpen},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "seq", Value: n}}}},
			options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc)
		if err == nil {
			if doc.Seq < n || doc.Seq < s.start-1+n {
				return mark{}, fmt.Errorf("counter %q is at %d after adding %d: %w", s.name, doc.Seq, n, ErrOverflow)
			}
			return mark{end: doc.Seq, ver: doc.Moves}, nil
		}
		if !errors.Is(err, mongo.ErrNoDocuments) {
			return mark{}, err
		}
		if missed {
			// A Claim process took the sequence over: take it back.
			if err := st.takeover(ctx, s, true, &r); err != nil {
				return mark{}, fmt.Errorf("counter %q: taking the sequence back from the Claim strategy: %w", s.name, err)
			}
			missed = false
			continue
		}
		// First use: create the counter holding the first block. A racing
		// creator makes this a duplicate key; then $inc again.
		if s.start-1 > math.MaxInt64-n {
			return mark{}, fmt.Errorf("counter %q: start %d + %d: %w", s.name, s.start, n, ErrOverflow)
		}
		last := s.start - 1 + n
		s.roundTrips.Add(1)
		_, err = a.counters.InsertOne(ctx, bson.D{{Key: "_id", Value: s.name}, {Key: "seq", Value: last}})
		if err == nil {
			return mark{end: last}, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return mark{}, err
		}
		missed = true
	}
	return mark{}, fmt.Errorf("counter %q: no block after %d attempts", s.name, maxAttempts)
}

// current reads the counter, or, while the Claim strategy has the gate
// closed, the claim chain.
func (st *atomicStore) current(ctx context.Context, s *Sequence) (int64, error) {
	if err := st.check(ctx, s); err != nil {
		return 0, err
	}
	var doc counterDoc
	s.roundTrips.Add(1)
	err := st.a.counters.FindOne(ctx, bson.D{{Key: "_id", Value: s.name}}).Decode(&doc)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return s.start - 1, nil
	case err != nil:
		return 0, err
	case doc.Gate != 0:
		c, err := (&claimStore{a: st.a}).current(ctx, s)
		return max(c, doc.Seq), err
	}
	return doc.Seq, nil
}

func (st *atomicStore) advance(ctx context.Context, s *Sequence, past int64, force bool) (mark, error) {
	if err := st.check(ctx, s); err != nil {
		return mark{}, err
	}
	op := "$max"
	if force {
		op = "$set"
	}
	missed := false
	var r rivalry
	for range maxAttempts {
		var doc counterDoc
		s.roundTrips.Add(1)
		// Every move counts, even one that leaves seq as it was, so that a
		// holder's give-back (filtered on the moves it saw) cannot undo it.
		err := st.a.counters.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: s.name}, gateOpen},
			bson.D{{Key: op, Value: bson.D{{Key: "seq", Value: past}}}, {Key: "$inc", Value: bson.D{{Key: "moves", Value: 1}}}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
		if !mongo.IsDuplicateKeyError(err) {
			return mark{end: doc.Seq, ver: doc.Moves}, err
		}
		// A racing creator, once; twice, the gate is closed.
		if missed {
			if err := st.takeover(ctx, s, true, &r); err != nil {
				return mark{}, fmt.Errorf("counter %q: taking the sequence back from the Claim strategy: %w", s.name, err)
			}
		}
		missed = !missed
	}
	return mark{}, fmt.Errorf("counter %q: not advanced after %d attempts", s.name, maxAttempts)
}

// giveBack moves the counter from the block's end back to from-1, with a
// filter on the block's end and on the admin moves seen when the block was
// reserved: if anyone reserved after it, or moved the counter (AdvancePast,
// even to where it already was), or the Claim strategy took the sequence
// over, nothing matches. (On FerretDB that holds for one connection only,
// like the rest of this strategy.)
func (st *atomicStore) giveBack(ctx context.Context, s *Sequence, last mark, from int64) (bool, error) {
	moves := bson.E{Key: "moves", Value: last.ver}
	if last.ver == 0 {
		moves.Value = bson.D{{Key: "$exists", Value: false}}
	}
	s.roundTrips.Add(1)
	res, err := st.a.counters.UpdateOne(ctx, bson.D{{Key: "_id", Value: s.name}, {Key: "seq", Value: last.end}, moves, gateOpen},
		bson.D{{Key: "$set", Value: bson.D{{Key: "seq", Value: from - 1}}}})
	if err != nil {
		return false, err
	}
	return res.ModifiedCount == 1, nil
}
