package sequence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

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
//
// Before its first version on a chain it did not start, a process takes
// the sequence over (see handover.go): it shuts the Atomic strategy out and
// fences the claims of the release before versions.
type claimStore struct{ a *Allocator }

// versionDoc is a version as this release writes it. Fmt 2 says that the
// chain it continues was taken over: the Atomic strategy is shut out and
// the previous release's claims are fenced.
type versionDoc struct {
	ID   string `bson:"_id"`
	Seq  string `bson:"seq"`
	V    int64  `bson:"v"`
	End  int64  `bson:"end"`
	Back bool   `bson:"back,omitempty"` // a give-back
	Fmt  int64  `bson:"fmt"`
}

// headDoc is a version as read: its end is a number, or {atomic: e} when
// the Atomic strategy took the sequence over at e (a seal).
type headDoc struct {
	V   int64         `bson:"v"`
	End bson.RawValue `bson:"end"`
	Fmt int64         `bson:"fmt"`
}

// headKind says who wrote the newest version, and so what a writer must do
// before it builds on it.
type headKind uint8

const (
	noVersions headKind = iota // none yet: the counter and older claims tell where to start
	ungated                    // written by a release that neither shuts Atomic out nor fences
	gated                      // fmt 2: Atomic is shut out, older claims are fenced
	sealed                     // the Atomic strategy serves the sequence from its end
)

// versionFmt is the format this release writes.
const versionFmt = 2

type floorDoc struct {
	ID  string `bson:"_id"`
	Seq string `bson:"seq"`
	F   int64  `bson:"f"`
}

func (*claimStore) kind() Strategy { return Claim }

func versionID(name string, v int64) string { return name + "#v" + strconv.FormatInt(v, 10) }

// head returns the newest version, its end, and who wrote it. With no
// version yet it returns version 0 at start-1.
func (st *claimStore) head(ctx context.Context, s *Sequence) (mark, headKind, error) {
	var d headDoc
	s.roundTrips.Add(1)
	err := st.a.claims.FindOne(ctx, bson.D{{Key: "seq", Value: s.name}, {Key: "v", Value: bson.D{{Key: "$gt", Value: 0}}}},
		options.FindOne().SetSort(bson.D{{Key: "v", Value: -1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return mark{end: s.start - 1}, noVersions, nil
	}
	if err != nil {
		return mark{}, 0, err
	}
	return d.mark(s.name)
}

func (d headDoc) mark(name string) (mark, headKind, error) {
	if end, ok := d.End.AsInt64OK(); ok {
		kind := ungated
		if d.Fmt >= versionFmt {
			kind = gated
		}
		return mark{end: end, ver: d.V}, kind, nil
	}
	if doc, ok := d.End.DocumentOK(); ok {
		if end, ok := doc.Lookup("atomic").AsInt64OK(); ok {
			return mark{end: end, ver: d.V}, sealed, nil
		}
	}
	return mark{}, 0, fmt.Errorf("counter %q: version %d has an end of type %s, which this release does not know", name, d.V, d.End.Type)
}

// chainHead returns the head to build the next version on, taking the
// sequence over first (see adopt) unless the head says that is done. r
// counts the calling operation's losses to the Atomic strategy.
func (st *claimStore) chainHead(ctx context.Context, s *Sequence, r *rivalry) (mark, error) {
	h, kind, err := st.head(ctx, s)
	if err != nil || kind == gated || (kind == ungated && s.adopted.Load()) {
		return h, err
	}
	if kind == sealed {
		if err := r.lost(ctx); err != nil {
			return mark{}, err
		}
	}
	return st.adopt(ctx, s, h, kind)
}

// base is where the chain starts when it has no version: past the counter
// document and past the claims "<name>#<first number>" of the release
// before versions, up to the fence that ends them.
func (st *claimStore) base(ctx context.Context, s *Sequence) (int64, error) {
	h, err := st.counterSeq(ctx, s)
	if err != nil {
		return 0, err
	}
	for range maxAttempts {
		hi, fence, err := st.oldClaim(ctx, s, h+1)
		if errors.Is(err, mongo.ErrNoDocuments) || (err == nil && fence) {
			return h, nil
		}
		if err != nil {
			return 0, err
		}
		h = hi
	}
	return 0, fmt.Errorf("counter %q: old claim chain longer than %d", s.name, maxAttempts)
}

// counterSeq reads the counter document's seq, start-1 if there is none.
func (st *claimStore) counterSeq(ctx context.Context, s *Sequence) (int64, error) {
	var doc counterDoc
	s.roundTrips.Add(1)
	err := st.a.counters.FindOne(ctx, bson.D{{Key: "_id", Value: s.name}}).Decode(&doc)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, err
	}
	return max(doc.Seq, s.start-1), nil
}

// floor returns the highest version that may have been pruned.
func (st *claimStore) floor(ctx context.Context, s *Sequence) (int64, error) {
	var f floorDoc
	s.roundTrips.Add(1)
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
	return st.settle(ctx, s, v, versionDoc{ID: versionID(s.name, v), Seq: s.name, V: v, End: end, Back: back, Fmt: versionFmt})
}

// settle inserts doc, the document of version v, and checks it against
// the floor; see insert.
func (st *claimStore) settle(ctx context.Context, s *Sequence, v int64, doc any) (ok bool, err error) {
	a := st.a
	s.roundTrips.Add(1)
	if _, err = a.claims.InsertOne(ctx, doc); err != nil {
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
		_, _ = a.claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: versionID(s.name, v)}})
		return false, nil
	}
	if keep := a.cfg.keep; v%keep == 0 && v > keep {
		a.background(func(ctx context.Context) { st.prune(ctx, s.name, v-keep) })
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
	var r rivalry
	if own.ver == 0 {
		// No claim of our own yet: start from the head.
		var err error
		if h, err = st.chainHead(ctx, s, &r); err != nil {
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
		if h, err = st.chainHead(ctx, s, &r); err != nil {
			return mark{}, err
		}
	}
	return mark{}, fmt.Errorf("counter %q: no free version after %d attempts", s.name, maxAttempts)
}

// current reads without taking anything over: the head's end; where the
// Atomic strategy serves, the counter's; with no version, the base.
func (st *claimStore) current(ctx context.Context, s *Sequence) (int64, error) {
	h, kind, err := st.head(ctx, s)
	switch {
	case err != nil:
		return 0, err
	case kind == noVersions:
		return st.base(ctx, s)
	case kind == sealed:
		c, err := st.counterSeq(ctx, s)
		return max(h.end, c), err
	}
	return h.end, nil
}

func (st *claimStore) advance(ctx context.Context, s *Sequence, past int64, force bool) (mark, error) {
	var r rivalry
	for range maxAttempts {
		h, err := st.chainHead(ctx, s, &r)
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

// prune deletes the versions of s up to f. The floor is raised first, so
// that a stale writer that re-inserts a deleted version sees it. The claims
// of the release before versions, and the fence after them, stay: a
// process of that release may still walk them (see fence).
func (st *claimStore) prune(ctx context.Context, name string, f int64) {
	a := st.a
	_, err := a.floors.InsertOne(ctx, floorDoc{ID: name + "#" + strconv.FormatInt(f, 10), Seq: name, F: f})
	if err = ignoreDup(err); err == nil {
		_, err = a.claims.DeleteMany(ctx, bson.D{{Key: "seq", Value: name}, {Key: "v", Value: bson.D{{Key: "$lte", Value: f}}}})
	}
	if err == nil {
		_, err = a.floors.DeleteMany(ctx, bson.D{{Key: "seq", Value: name}, {Key: "f", Value: bson.D{{Key: "$lt", Value: f}}}})
	}
	if err != nil {
		a.cfg.logger.Debug("sequence: pruning claims failed; the next prune retries", "sequence", name, "err", err)
	}
}
