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

// claimStore settles each reservation by inserting a claim document for
// the next version of the sequence: version v's document has the unique
// _id "<name>#v<v>" and holds end, the last number reserved once v is
// settled. A reservation of n numbers reads version v's end e and inserts
// version v+1 with end e+n; the server's unique-key check lets exactly one
// writer have each version, so the blocks (e, e+n] never overlap. Versions
// are consecutive, so a writer whose idea of the newest version is old
// collides with the next one and is sent to the head.
//
// Giving numbers back is one more version whose end is lower: it can only
// be inserted by the holder of the version before it, so only if nobody
// reserved after it.
//
// Claims far behind the head are pruned (see prune): the floor is raised
// first, in "<counters>.floors", then older claims are deleted. A writer
// whose stale idea of the head makes it insert a version that was pruned
// would succeed; so every inserted claim is checked against the floor read
// after the insert, and one at or below it is dropped, never used.
type claimStore struct{ a *Allocator }

type versionDoc struct {
	ID   string `bson:"_id"`
	Seq  string `bson:"seq"`
	V    int64  `bson:"v"`
	End  int64  `bson:"end"`
	Back bool   `bson:"back,omitempty"` // a give-back
}

type floorDoc struct {
	ID  string `bson:"_id"`
	Seq string `bson:"seq"`
	F   int64  `bson:"f"`
}

func (*claimStore) kind() Strategy { return Claim }

func versionID(name string, v int64) string { return name + "#v" + strconv.FormatInt(v, 10) }

// head returns the newest version and its end. With no version yet it
// returns version 0 at the base: the counter document, and a chain of
// claims by first number left by an earlier release, if any.
func (st *claimStore) head(ctx context.Context, s *Sequence) (mark, error) {
	var d versionDoc
	st.a.roundTrips.Add(1)
	err := st.a.claims.FindOne(ctx, bson.D{{Key: "seq", Value: s.name}, {Key: "v", Value: bson.D{{Key: "$gt", Value: 0}}}},
		options.FindOne().SetSort(bson.D{{Key: "v", Value: -1}})).Decode(&d)
	if err == nil {
		return mark{end: d.End, ver: d.V}, nil
	}
	if !errors.Is(err, mongo.ErrNoDocuments) {
		return mark{}, err
	}
	base, err := st.base(ctx, s)
	return mark{end: base}, err
}

// base is where version 1 starts: past the counter document (written by
// the Atomic strategy, or as a hint) and past the claims of the form
// "<name>#<first number>" of releases before versions.
func (st *claimStore) base(ctx context.Context, s *Sequence) (int64, error) {
	var doc counterDoc
	st.a.roundTrips.Add(1)
	err := st.a.counters.FindOne(ctx, bson.D{{Key: "_id", Value: s.name}}).Decode(&doc)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, err
	}
	h := max(doc.Seq, s.start-1)
	for range maxAttempts {
		var c struct{ Hi int64 }
		st.a.roundTrips.Add(1)
		err := st.a.claims.FindOne(ctx, bson.D{{Key: "_id", Value: s.name + "#" + strconv.FormatInt(h+1, 10)}}).Decode(&c)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return h, nil
		}
		if err != nil {
			return 0, err
		}
		h = c.Hi
	}
	return 0, fmt.Errorf("counter %q: old claim chain longer than %d", s.name, maxAttempts)
}

// floor returns the highest version that may have been pruned.
func (st *claimStore) floor(ctx context.Context, s *Sequence) (int64, error) {
	var f floorDoc
	st.a.roundTrips.Add(1)
	err := st.a.floors.FindOne(ctx, bson.D{{Key: "seq", Value: s.name}},
		options.FindOne().SetSort(bson.D{{Key: "f", Value: -1}})).Decode(&f)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return f.F, err
}

// insert tries to settle version v with the given end. ok is false when
// someone else holds v, or held it before it was pruned.
func (st *claimStore) insert(ctx context.Context, s *Sequence, v, end int64, back bool) (ok bool, err error) {
	a := st.a
	id := versionID(s.name, v)
	a.roundTrips.Add(1)
	_, err = a.claims.InsertOne(ctx, versionDoc{ID: id, Seq: s.name, V: v, End: end, Back: back})
	if mongo.IsDuplicateKeyError(err) || err != nil {
		return false, ignoreDup(err)
	}
	f, err := st.floor(ctx, s)
	if err != nil {
		return false, err
	}
	if v <= f {
		// The version was settled long ago and pruned since: this claim is
		// a stale copy. Nobody may build on it; the next prune would
		// delete it anyway.
		_, _ = a.claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
		return false, nil
	}
	if keep := a.cfg.keep; v%keep == 0 && v > keep {
		a.background(func(ctx context.Context) { st.prune(ctx, s.name, v-keep) })
	}
	// At most one hint write a second per sequence: the counter document
	// then says roughly where the sequence is, for people reading it.
	if now := time.Now().UnixNano(); now-s.hintAt.Load() >= int64(time.Second) {
		s.hintAt.Store(now)
		a.background(func(ctx context.Context) { st.moveHint(ctx, s.name, end) })
	}
	return true, nil
}

func ignoreDup(err error) error {
	if mongo.IsDuplicateKeyError(err) {
		return nil
	}
	return err
}

func (st *claimStore) reserve(ctx context.Context, s *Sequence, own mark, n int64) (mark, error) {
	h := own
	if own.ver == 0 {
		// No claim of our own yet: start from the head.
		var err error
		if h, err = st.head(ctx, s); err != nil {
			return mark{}, err
		}
	}
	for range maxAttempts {
		if h.end > math.MaxInt64-n {
			return mark{}, fmt.Errorf("counter %q: %d + %d: %w", s.name, h.end, n, ErrOverflow)
		}
		m := mark{end: h.end + n, ver: h.ver + 1}
		ok, err := st.insert(ctx, s, m.ver, m.end, false)
		if ok || err != nil {
			return m, err
		}
		if h, err = st.head(ctx, s); err != nil {
			return mark{}, err
		}
	}
	return mark{}, fmt.Errorf("counter %q: no free version after %d attempts", s.name, maxAttempts)
}

func (st *claimStore) current(ctx context.Context, s *Sequence) (int64, error) {
	h, err := st.head(ctx, s)
	return h.end, err
}

func (st *claimStore) advance(ctx context.Context, s *Sequence, past int64, force bool) (mark, error) {
	for range maxAttempts {
		h, err := st.head(ctx, s)
		if err != nil {
			return mark{}, err
		}
		if force && past < h.end {
			return mark{}, fmt.Errorf("counter %q: lowering it from %d to %d would hand out numbers again: %w", s.name, h.end, past, ErrUnsupported)
		}
		// A move settles a version even when the head is past already, so
		// that a holder's give-back (the version after its own) fails and
		// cannot take the counter back below past.
		end := max(h.end, past)
		ok, err := st.insert(ctx, s, h.ver+1, end, false)
		if ok || err != nil {
			return mark{end: end, ver: h.ver + 1}, err
		}
	}
	return mark{}, fmt.Errorf("counter %q: not advanced after %d attempts", s.name, maxAttempts)
}

// giveBack settles the version after last with the lower end from-1. Only
// one writer can settle it: if someone reserved after last, their claim
// holds it and nothing is given back.
func (st *claimStore) giveBack(ctx context.Context, s *Sequence, last mark, from int64) (bool, error) {
	return st.insert(ctx, s, last.ver+1, from-1, true)
}

// prune deletes the claims of s up to version f. The floor is raised first,
// so that a stale writer that re-inserts a deleted version sees it.
func (st *claimStore) prune(ctx context.Context, name string, f int64) {
	a := st.a
	_, err := a.floors.InsertOne(ctx, floorDoc{ID: name + "#" + strconv.FormatInt(f, 10), Seq: name, F: f})
	if err = ignoreDup(err); err == nil {
		_, err = a.claims.DeleteMany(ctx, bson.D{{Key: "seq", Value: name}, {Key: "$or", Value: bson.A{
			bson.D{{Key: "v", Value: bson.D{{Key: "$lte", Value: f}}}},
			bson.D{{Key: "v", Value: bson.D{{Key: "$exists", Value: false}}}}, // the old chain
		}}})
	}
	if err == nil {
		_, err = a.floors.DeleteMany(ctx, bson.D{{Key: "seq", Value: name}, {Key: "f", Value: bson.D{{Key: "$lt", Value: f}}}})
	}
	if err != nil {
		a.cfg.logger.Debug("sequence: pruning claims failed; the next prune retries", "sequence", name, "err", err)
	}
}

// moveHint raises the counter document to end. Nobody depends on it; its
// failure is harmless.
func (st *claimStore) moveHint(ctx context.Context, name string, end int64) {
	a := st.a
	a.hintWrites.Add(1)
	if _, err := a.counters.UpdateOne(ctx, bson.D{{Key: "_id", Value: name}},
		bson.D{{Key: "$max", Value: bson.D{{Key: "seq", Value: end}}}}, options.Update().SetUpsert(true)); err != nil {
		a.cfg.logger.Debug("sequence: moving the hint failed", "sequence", name, "err", err)
	}
}
