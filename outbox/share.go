package outbox

import (
	"context"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Relays is the collection, in the relay's database, where each relay
// says which collections it serves while it works on them: one small
// document per relay and collection, written again every half lease (see
// WithLease) and removed when its Run ends. The relays serving a
// collection share its documents, so that they do not claim the same
// ones: each reads as many as all of them would (WithBatch each), and
// claims those that fall to it, by rendezvous hashing of the document's
// lease key with the relays' IDs, so that a relay that comes or goes
// moves only the documents that fall to it. A relay that finds none of
// its own in what it read, or that went through its share of a read that
// holds every due document, claims the others' it can from that read,
// newest first, until its claims keep meeting theirs: so the documents
// of a relay that stopped without a word wait no longer than its leases,
// and the others count a relay silent for two leases out. Those a relay
// that lags has not claimed, while it holds others, may wait a few poll
// intervals: each claim that meets one of its leases shows one of them. A document of Relays counts a relay only if its _id is
// the one a relay writes, of the collection's name and the relay's ID,
// and its date is within two leases of the relay's clock; pruning
// deletes those with no date. A relay that finds the words of more than
// 100 relays for a collection works on it alone, claiming all it reads.
// The leases alone decide who delivers a document; the shares only
// spare the relays each other's claims.
const Relays = "outbox_relays"

// memberDoc is a relay's document in Relays.
type memberDoc struct {
	ID    string             `bson:"_id"`
	Coll  string             `bson:"coll"`
	Relay string             `bson:"relay"`
	At    primitive.DateTime `bson:"at"`
}

// share is what a relay knows of the relays serving one collection.
type share struct {
	mu      sync.Mutex
	said    time.Time // when the relay last wrote its document
	looked  time.Time // when it last read the others'
	warned  time.Time // when it last warned of a clock ahead of its own
	members []string  // the relays serving it, this one included, sorted
}

// beatEvery is how often, in leases, a relay writes its document of
// Relays, and memberFor how long, in leases, the others count it after
// its last write.
const (
	beatEvery = 0.5
	memberFor = 2
)

// lookEvery is how many times a lease a relay may read, between its
// writes, which relays serve a collection: before each read of due
// documents and each claim, so that relays that start together, each of
// which may first read fewer than all, learn of each other before they
// claim each other's documents; at most every twentieth of a lease, a
// read of a few small documents.
const lookEvery = 20

// members says in Relays that the relay serves coll, once every half
// lease, and reads which relays serve it then and, between its writes,
// every twentieth of a lease at most; it returns them, the relay
// included, sorted. A relay whose write or read fails works alone until
// the next succeeds: sharing only spares relays each other's claims, and
// the leases keep every document to one relay either way. A read between
// writes that fails keeps what the relay knew.
func (r *Relay) members(ctx context.Context, coll *mongo.Collection) []string {
	stored, _ := r.shares.LoadOrStore(coll.Name(), &share{})
	s := stored.(*share)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := r.now()
	if s.members != nil && now.Sub(s.said) < time.Duration(float64(r.cfg.lease)*beatEvery) {
		if now.Sub(s.looked) >= r.cfg.lease/lookEvery {
			s.looked = now
			if v, err := r.look(ctx, coll.Name(), now); err == nil {
				s.members = r.withSelf(v.ids)
				r.warnAhead(ctx, s, coll.Name(), v, now)
			}
		}
		return s.members
	}
	v, err := r.say(ctx, coll.Name(), now)
	if err != nil && ctx.Err() == nil {
		r.cfg.logger.WarnContext(ctx, "outbox: relay works alone until it can read the others", "relay", r.id, "collection", coll.Name(), "error", err)
		v = view{}
	}
	s.said, s.looked, s.members = now, now, r.withSelf(v.ids)
	r.warnAhead(ctx, s, coll.Name(), v, now)
	return s.members
}

// view is what a relay read of the relays serving a collection: their
// IDs, and the word dated furthest ahead of its clock, of which relay.
type view struct {
	ids   []string
	ahead time.Duration
	by    string
}

// warnAhead warns, once a lease at most, when v holds a word dated more
// than a third of a lease ahead of the relay's clock: a word is dated by
// its relay's clock when written, so that relay's clock runs at least as
// far ahead, further than relays may differ (see WithLease).
func (r *Relay) warnAhead(ctx context.Context, s *share, coll string, v view, now time.Time) {
	if v.ahead <= r.cfg.lease/3 || now.Sub(s.warned) < r.cfg.lease {
		return
	}
	s.warned = now
	r.cfg.logger.WarnContext(ctx, "outbox: another relay's clock runs ahead of this one's by more than a third of the lease; relays whose clocks differ by that much may publish an event twice at once",
		"relay", r.id, "collection", coll, "other", v.by, "ahead", v.ahead, "lease", r.cfg.lease)
}

// withSelf returns members, sorted, with the relay among them.
func (r *Relay) withSelf(members []string) []string {
	if !slices.Contains(members, r.id) {
		members = append(members, r.id)
		slices.Sort(members)
	}
	return members
}

// say writes the relay's document for coll in Relays and reads which
// relays serve coll (see look).
func (r *Relay) say(ctx context.Context, coll string, now time.Time) (view, error) {
	relays := r.db.Collection(Relays)
	doc := memberDoc{ID: keyPrefix(r.db.Collection(coll)) + r.id, Coll: coll, Relay: r.id, At: date(now)}
	_, err := relays.ReplaceOne(ctx, bson.D{{Key: "_id", Value: doc.ID}}, doc, options.Replace().SetUpsert(true))
	if err != nil {
		return view{}, fmt.Errorf("writing to %s: %w", Relays, err)
	}
	return r.look(ctx, coll, now)
}

// look reads the IDs of the relays that wrote their documents for coll
// in Relays within memberFor leases, by their clocks no more than
// memberFor leases ahead of the relay's; more than maxMembers of them is
// an error.
func (r *Relay) look(ctx context.Context, coll string, now time.Time) (view, error) {
	relays := r.db.Collection(Relays)
	// A word dated further ahead than a relay's clock may run is no
	// relay's: counting it would leave its share to the others' steals.
	// Only an _id that is the collection's prefix and a relay's ID, a
	// UUID, names a relay, so that what else is stored in Relays is
	// neither sent back nor decoded (and, on MongoDB, read through the
	// _id index), and no more than maxMembers count.
	prefix := keyPrefix(r.db.Collection(coll))
	since, until := date(now.Add(-memberFor*r.cfg.lease)), date(now.Add(memberFor*r.cfg.lease))
	filter := bson.D{
		{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^" + regexp.QuoteMeta(prefix) + relayIDPattern + `\z`}}},
		{Key: "at", Value: bson.D{{Key: "$gt", Value: since}, {Key: "$lte", Value: until}, {Key: "$not", Value: bson.D{{Key: "$type", Value: "array"}}}}},
	}
	cur, err := relays.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: 1}}).SetLimit(maxMembers+1))
	if err != nil {
		return view{}, fmt.Errorf("reading %s: %w", Relays, err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	var v view
	for cur.Next(ctx) {
		id, ok := cur.Current.Lookup("_id").StringValueOK()
		relay, found := strings.CutPrefix(id, prefix)
		if !ok || !found || !relayID.MatchString(relay) {
			continue
		}
		v.ids = append(v.ids, relay)
		if at, ok := cur.Current.Lookup("at").DateTimeOK(); ok && relay != r.id {
			if ahead := time.UnixMilli(at).Sub(now); ahead > v.ahead {
				v.ahead, v.by = ahead, relay
			}
		}
	}
	if err := cur.Err(); err != nil {
		return view{}, fmt.Errorf("reading %s: %w", Relays, err)
	}
	if len(v.ids) > maxMembers {
		return view{}, fmt.Errorf("%s holds the words of more than %d relays serving %s", Relays, maxMembers, coll)
	}
	slices.Sort(v.ids)
	v.ids = slices.Compact(v.ids)
	return v, nil
}

// maxMembers is the most relays that share a collection; a relay that
// reads the words of more works alone (see members).
const maxMembers = 100

// relayIDPattern matches a relay's ID as NewRelay makes it, and relayID
// matches nothing else.
const relayIDPattern = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

var relayID = regexp.MustCompile(`\A` + relayIDPattern + `\z`)

// owner returns which of members a document with lease key key falls
// to: the one with the highest hash of the key and its ID.
func owner(key string, members []string) string {
	var best string
	var top uint64
	for _, m := range members {
		h := fnv.New64a()
		h.Write([]byte(key))
		h.Write([]byte{0})
		h.Write([]byte(m))
		if v := h.Sum64(); best == "" || v > top {
			best, top = m, v
		}
	}
	return best
}

// ours returns the documents of docs that fall to the relay among
// members, in their order.
func (r *Relay) ours(docs []pendingDoc, members []string) []pendingDoc {
	if len(members) <= 1 {
		return docs
	}
	var mine []pendingDoc
	for _, d := range docs {
		if owner(d.key, members) == r.id {
			mine = append(mine, d)
		}
	}
	return mine
}

// forget deletes the documents of Relays whose relays have been silent
// for ten leases, as pruning does for leases, those dated ten leases or
// more ahead, and those no relay writes: with no date, or an _id that
// names no relay.
func (r *Relay) forget(ctx context.Context, now time.Time) {
	old, ahead := date(now.Add(-pruneEvery*r.cfg.lease)), date(now.Add(pruneEvery*r.cfg.lease))
	_, _ = r.db.Collection(Relays).DeleteMany(ctx, bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: old}}}},
		bson.D{{Key: "at", Value: bson.D{{Key: "$gt", Value: ahead}}}},
		bson.D{{Key: "at", Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$type", Value: "date"}}}}}},
		bson.D{{Key: "at", Value: bson.D{{Key: "$type", Value: "array"}}}},
		bson.D{{Key: "_id", Value: bson.D{{Key: "$not", Value: primitive.Regex{Pattern: wordIDPattern}}}}},
	}}})
}

// wordIDPattern matches the _id of a relay's document of Relays, of any
// collection (see keyPrefix).
const wordIDPattern = `^[0-9]+:[\s\S]*\|` + relayIDPattern + `\z`

// leaveTimeout bounds leave's write.
const leaveTimeout = 5 * time.Second

// leave deletes the relay's documents of Relays and forgets what it knew
// of the others, so that the relays still serving its collections share
// its documents at once, instead of after memberFor leases.
func (r *Relay) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	_, err := r.db.Collection(Relays).DeleteMany(ctx, bson.D{{Key: "relay", Value: r.id}})
	if err != nil {
		r.cfg.logger.WarnContext(ctx, "outbox: a stopped relay could not remove itself; the others share its documents once its word lapses", "relay", r.id, "collection", Relays, "error", err)
	}
	r.shares.Clear()
}
