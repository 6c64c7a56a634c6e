package outbox

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// badDoc is a due document whose Field the relay cannot decode: written
// by something other than the outbox, or changed by hand.
type badDoc struct {
	raw bson.Raw
	err error
}

// asideFor is how long a relay sets aside a document whose Field it
// cannot decode: its events wait, and every relay leaves it out of its
// reads, so that it does not hold up the collection's other documents;
// then the relays read it, and warn of it, again.
const asideFor = time.Hour

// maxLogged is the most bytes of an _id a warning holds.
const maxLogged = 200

// setAside sets aside each of bad for asideFor, by the backoff's hold, in
// one write, unless its Field has changed since the read to none of what
// was read, and warns of them once, naming the collection, how many, and
// the first one and what failed. Unless it set all of them aside, it
// returns their _ids, which the caller leaves out of its next reads, so
// that a Drain never reads the same ones again (a server may not match
// the Field it sent back, or another write may change it meanwhile).
func (r *Relay) setAside(ctx context.Context, coll *mongo.Collection, bad []badDoc) bson.A {
	var kept bson.A
	var aside int64
	until := r.now().Add(asideFor)
	ids, boxes := make(bson.A, len(bad)), make(bson.A, len(bad))
	for i, b := range bad {
		ids[i], boxes[i] = b.raw.Lookup("_id"), b.raw.Lookup(Field)
	}
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, {Key: Field, Value: bson.D{{Key: "$in", Value: boxes}}}}
	res, failed := coll.UpdateMany(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: path(partHold), Value: date(until)}}}})
	if failed == nil {
		aside = res.MatchedCount
	}
	if aside < int64(len(bad)) {
		for _, b := range bad {
			kept = append(kept, b.raw.Lookup("_id"))
		}
	}
	first := subject(rawID(bad[0].raw.Lookup("_id")))
	if len(first) > maxLogged {
		first = first[:maxLogged] + "…"
	}
	attrs := []any{"collection", coll.Name(), "documents", len(bad), "aside", aside, "first", first, "error", bad[0].err}
	if failed != nil {
		attrs = append(attrs, "aside error", failed)
	}
	r.cfg.logger.WarnContext(ctx, "outbox: documents' "+Field+" cannot be read; their events wait until they are repaired, and the relays leave them for an hour", append(attrs, "until", until)...)
	return kept
}

// rawID is a document's _id read raw, as the relay reads it decoded.
func rawID(v bson.RawValue) any {
	var id any
	if err := v.Unmarshal(&id); err != nil {
		return v.String()
	}
	return id
}
