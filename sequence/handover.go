package sequence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// A sequence is served by one strategy at a time, and a process of either
// strategy takes it over from the other before it hands out a number, so
// that a database numbered with claims can be served with Atomic (moved
// from FerretDB to MongoDB, or Atomic forced on one client) and back, and
// both may even run side by side, without handing a number out twice.
//
// The Atomic strategy writes only to the counter document, so the Claim
// strategy shuts it out there: the counter's gate field, while present,
// fails every Atomic write (they all filter on its absence). A Claim
// process closes the gate, reads the counter's last number, and only then
// settles a version past it (adopt). The Claim strategy writes only to its
// chain of versions, so the Atomic strategy shuts it out there: it settles
// the chain's next version as a seal, {end: {atomic: e}}, which no Claim
// writer builds on, moves the counter past e and opens the gate, but only
// if no Claim process closed it for a version after the seal (takeover).
// Each check costs round trips once per sequence and process, and again
// only when the other strategy took the sequence over meanwhile.
//
// The release before versions numbered with claims "<name>#<first
// number>" and followed the chain from the counter's seq. Before the first
// version of this release, the chain is ended with a fence: a claim in that
// format whose last number is not a number, which that release fails to
// read, so its writers stop with an error instead of claiming past it. The
// counter's seq is raised to just before the fence, so that one of them
// starting later meets the fence first too.

// fenceNote is the fence's "hi": not a number, on purpose.
const fenceNote = "fenced: this sequence is numbered by a newer release"

// oldClaimDoc is a claim of the release before versions, or a fence.
type oldClaimDoc struct {
	Hi    bson.RawValue `bson:"hi"`
	Fence bool          `bson:"fence"`
}

// oldClaim reads the claim of the release before versions that starts at lo.
func (st *claimStore) oldClaim(ctx context.Context, s *Sequence, lo int64) (hi int64, fence bool, err error) {
	var c oldClaimDoc
	s.roundTrips.Add(1)
	if err := st.a.claims.FindOne(ctx, bson.D{{Key: "_id", Value: oldClaimID(s.name, lo)}}).Decode(&c); err != nil {
		return 0, false, err
	}
	if c.Fence {
		return lo - 1, true, nil
	}
	hi, ok := c.Hi.AsInt64OK()
	if !ok {
		return 0, false, fmt.Errorf("counter %q: the claim of %d has a last number of type %s", s.name, lo, c.Hi.Type)
	}
	return hi, false, nil
}

func oldClaimID(name string, lo int64) string { return name + "#" + strconv.FormatInt(lo, 10) }

// adopt takes the sequence over for the Claim strategy, from the head h of
// kind kind: it closes the gate for versions after h, fences the previous
// release's claims, and returns the place to settle version h.ver+1 past:
// past h, past every number the Atomic strategy handed out, and past the
// fenced claims.
func (st *claimStore) adopt(ctx context.Context, s *Sequence, h mark, kind headKind) (mark, error) {
	seq, err := st.closeGate(ctx, s, h.ver+1)
	if err != nil {
		return mark{}, fmt.Errorf("counter %q: shutting the Atomic strategy out: %w", s.name, err)
	}
	fenced, err := st.fence(ctx, s, seq)
	if err != nil {
		return mark{}, fmt.Errorf("counter %q: fencing the claims of the release before versions: %w", s.name, err)
	}
	if kind == sealed {
		st.a.cfg.logger.Warn("sequence: the Claim strategy takes over a sequence the Atomic strategy served",
			"sequence", s.name, "counter", seq, "version", h.ver)
	}
	s.adopted.Store(true)
	return mark{end: max(h.end, seq, fenced), ver: h.ver}, nil
}

// closeGate raises the counter's gate to at least g and returns its seq,
// start-1 if none: the last number the Atomic strategy handed out, since
// none succeeds after the gate is closed.
func (st *claimStore) closeGate(ctx context.Context, s *Sequence, g int64) (int64, error) {
	var err error
	for range 2 { // a racing creator of the counter makes the upsert a duplicate key once
		var doc counterDoc
		s.roundTrips.Add(1)
		err = st.a.counters.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: s.name}},
			bson.D{{Key: "$max", Value: bson.D{{Key: "gate", Value: g}}}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&doc)
		if err == nil {
			return max(doc.Seq, s.start-1), nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			break
		}
	}
	return 0, err
}

// fence walks the previous release's claims from the counter's seq to
// their end, ends them with a fence unless one is there, and returns the
// last number they hold (seq when there are none).
func (st *claimStore) fence(ctx context.Context, s *Sequence, seq int64) (int64, error) {
	h := seq
	for range maxAttempts {
		if h == math.MaxInt64 {
			return h, nil // nothing can be claimed past it
		}
		s.roundTrips.Add(1)
		_, err := st.a.claims.InsertOne(ctx, bson.D{{Key: "_id", Value: oldClaimID(s.name, h+1)}, {Key: "seq", Value: s.name},
			{Key: "lo", Value: h + 1}, {Key: "hi", Value: fenceNote}, {Key: "fence", Value: true}})
		if err == nil {
			break
		}
		if !mongo.IsDuplicateKeyError(err) {
			return 0, err
		}
		hi, fence, err := st.oldClaim(ctx, s, h+1)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue // deleted meanwhile: fence the place again
		}
		if err != nil {
			return 0, err
		}
		if fence {
			break
		}
		h = hi
	}
	if h > seq {
		// A writer of that release starts at seq+1 and jumps to seq on its
		// first collision: at the fence, it then stays there.
		s.roundTrips.Add(1)
		if _, err := st.a.counters.UpdateOne(ctx, bson.D{{Key: "_id", Value: s.name}},
			bson.D{{Key: "$max", Value: bson.D{{Key: "seq", Value: h}}}}); err != nil {
			return 0, err
		}
	}
	return h, nil
}

// rivalry counts how often one call found the sequence taken by the other
// strategy. Processes of both strategies on one sequence can take it from
// each other in lockstep, each losing it before it hands out a number;
// from the second loss on, lost waits a random pause, up to 2^(n-1) ms and
// at most 100 ms, so that they fall out of step.
type rivalry int

func (r *rivalry) lost(ctx context.Context) error {
	*r++
	if *r < 2 {
		return nil
	}
	d := time.Duration(rand.Int64N(int64(min(time.Millisecond<<min(*r-1, 7), 100*time.Millisecond))))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// gateOpen is the condition every Atomic write filters on.
var gateOpen = bson.E{Key: "gate", Value: bson.D{{Key: "$exists", Value: false}}}

// check is the Atomic strategy's first step on a sequence in a process:
// when the sequence has claims, it takes the sequence over.
func (st *atomicStore) check(ctx context.Context, s *Sequence) error {
	if s.checked.Load() {
		return nil
	}
	var r rivalry
	if err := st.takeover(ctx, s, false, &r); err != nil {
		return fmt.Errorf("counter %q: taking the sequence over from the Claim strategy: %w", s.name, err)
	}
	s.checked.Store(true)
	return nil
}

// takeover seals the claim chain and opens the gate past the seal. Without
// shut (the first check), a sequence with no claims is left as it is;
// with it (an Atomic write found the gate closed), it is sealed even so.
// r counts the losses of the calling operation.
func (st *atomicStore) takeover(ctx context.Context, s *Sequence, shut bool, r *rivalry) error {
	a := st.a
	cs := &claimStore{a: a}
	reseal := false // the gate stayed closed after a seal: settle a newer one
	for range maxAttempts {
		var d headDoc
		s.roundTrips.Add(1)
		err := a.claims.FindOne(ctx, bson.D{{Key: "seq", Value: s.name}},
			options.FindOne().SetSort(bson.D{{Key: "v", Value: -1}})).Decode(&d)
		if errors.Is(err, mongo.ErrNoDocuments) && !shut {
			return nil
		}
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return err
		}
		h, kind := mark{}, noVersions
		if err == nil && d.V > 0 {
			if h, kind, err = d.mark(s.name); err != nil {
				return err
			}
		} else {
			// Claims of the release before versions, a fence, or only a
			// closed gate: the chain starts past them.
			seq, err := cs.counterSeq(ctx, s)
			if err != nil {
				return err
			}
			if h.end, err = cs.fence(ctx, s, seq); err != nil {
				return err
			}
		}
		if kind != sealed || reseal {
			seal := h.ver + 1
			ok, err := cs.settle(ctx, s, seal, bson.D{{Key: "_id", Value: versionID(s.name, seal)}, {Key: "seq", Value: s.name},
				{Key: "v", Value: seal}, {Key: "end", Value: bson.D{{Key: "atomic", Value: h.end}}}, {Key: "fmt", Value: versionFmt}})
			if err != nil {
				return err
			}
			if !ok {
				// A Claim writer settled it first: seal after it.
				if err := r.lost(ctx); err != nil {
					return err
				}
				continue
			}
			a.cfg.logger.Warn("sequence: the Atomic strategy takes over a sequence numbered with claims",
				"sequence", s.name, "from", h.end, "version", seal)
			h.ver = seal
		}
		opened, err := st.open(ctx, s, h)
		if opened || err != nil {
			return err
		}
		reseal = true
		if err := r.lost(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("the Claim strategy kept it after %d attempts", maxAttempts)
}

// open moves the counter past the seal h and removes the gate, unless a
// Claim process closed it for a version after the seal.
func (st *atomicStore) open(ctx context.Context, s *Sequence, h mark) (bool, error) {
	a := st.a
	s.roundTrips.Add(1)
	res, err := a.counters.UpdateOne(ctx, bson.D{{Key: "_id", Value: s.name}, {Key: "$or", Value: bson.A{
		bson.D{gateOpen}, bson.D{{Key: "gate", Value: bson.D{{Key: "$lte", Value: h.ver}}}},
	}}}, bson.D{{Key: "$max", Value: bson.D{{Key: "seq", Value: h.end}}}, {Key: "$unset", Value: bson.D{{Key: "gate", Value: ""}}}})
	if err != nil || res.MatchedCount == 1 {
		return err == nil, err
	}
	s.roundTrips.Add(1)
	_, err = a.counters.InsertOne(ctx, bson.D{{Key: "_id", Value: s.name}, {Key: "seq", Value: h.end}})
	if mongo.IsDuplicateKeyError(err) {
		return false, nil // there, with the gate closed after the seal
	}
	return err == nil, err
}
