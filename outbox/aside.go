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

// setAside sets aside each of bad for asideFor, by the backoff's hold,
// unless its Field has changed since the read, and warns of it, naming
// the collection, the document and what failed. It returns their _ids.
// A document it cannot set aside (its Field is no document) stays out of
// this Drain's reads only.
func (r *Relay) setAside(ctx context.Context, coll *mongo.Collection, bad []badDoc) bson.A {
	ids := make(bson.A, 0, len(bad))
	until := r.now().Add(asideFor)
	for _, b := range bad {
		id := b.raw.Lookup("_id")
		ids = append(ids, id)
		filter := bson.D{{Key: "_id", Value: id}, {Key: Field, Value: b.raw.Lookup(Field)}}
		_, err := coll.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: path(partHold), Value: date(until)}}}})
		attrs := []any{"collection", coll.Name(), "subject", subject(rawID(id)), "error", b.err}
		if err != nil {
			r.cfg.logger.WarnContext(ctx, "outbox: a document's "+Field+" cannot be read, and the relay could not set it aside; its events wait until it is repaired",
				append(attrs, "set aside", err)...)
			continue
		}
		r.cfg.logger.WarnContext(ctx, "outbox: a document's "+Field+" cannot be read; its events wait until it is repaired, and the relays leave it for a while",
			append(attrs, "until", until)...)
	}
	return ids
}

// rawID is a document's _id read raw, as the relay reads it decoded.
func rawID(v bson.RawValue) any {
	var id any
	if err := v.Unmarshal(&id); err != nil {
		return v.String()
	}
	return id
}
