package autokeys

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/sequence"
	"go.mongodb.org/mongo-driver/mongo"
)

// Where Keys acts: the collection each event's repository writes to
// (Event.Coll), never a collection of the same name in the counters'
// database. A model type written to several collections (repositories
// over several databases) gets its indexes made and its counters checked
// against each.

// target is one collection a model type is written to.
type target struct {
	coll  *mongo.Collection
	mu    sync.Mutex
	ready atomic.Bool // indexes made and counters checked against the data
}

// collKey names a collection across clients and databases.
type collKey struct {
	client   *mongo.Client
	db, name string
}

// target returns p's target for e's collection.
func (p *plan) target(e *events.Event) (*target, error) {
	if e.Coll == nil {
		return nil, fmt.Errorf("autokeys: the %v event of %v carries no collection (Event.Coll) to make its indexes and check its counters in", e.Type, p.schema.Type)
	}
	return p.targetOf(e.Coll), nil
}

// targetOf returns p's target for coll.
func (p *plan) targetOf(coll *mongo.Collection) *target {
	k := collKey{coll.Database().Client(), coll.Database().Name(), coll.Name()}
	if t, ok := p.targets.Load(k); ok {
		return t.(*target)
	}
	t, _ := p.targets.LoadOrStore(k, &target{coll: coll})
	return t.(*target)
}

// maxCachedSequences bounds the dated and tenant-scoped sequences a field
// keeps at hand (one per collection, tenant and period). Past it, those
// not used since the last sweep are dropped; one used again is taken from
// the allocator again, and a tenant's is checked against the data again.
var maxCachedSequences int64 = 1024

// seqCache holds a field's dated and tenant-scoped sequences, each ready
// for one target, within maxCachedSequences.
type seqCache struct {
	m  sync.Map // seqKey -> *cachedSeq
	n  atomic.Int64
	mu sync.Mutex // one sweep at a time
}

type seqKey struct {
	t   *target
	key string // "@tenant", "/period" or "@tenant/period"
}

type cachedSeq struct {
	seq  *sequence.Sequence
	used atomic.Bool
}

// load returns the sequence stored under k.
func (c *seqCache) load(k seqKey) (*sequence.Sequence, bool) {
	v, ok := c.m.Load(k)
	if !ok {
		return nil, false
	}
	e := v.(*cachedSeq)
	if !e.used.Load() {
		e.used.Store(true)
	}
	return e.seq, true
}

// store keeps s under k, unless another caller stored one first, and
// returns the one kept.
func (c *seqCache) store(k seqKey, s *sequence.Sequence) *sequence.Sequence {
	e := &cachedSeq{seq: s}
	e.used.Store(true)
	v, loaded := c.m.LoadOrStore(k, e)
	if !loaded && c.n.Add(1) > maxCachedSequences {
		c.sweep()
	}
	return v.(*cachedSeq).seq
}

// sweep drops the sequences not used since the last sweep, and marks the
// others unused.
func (c *seqCache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n.Load() <= maxCachedSequences {
		return
	}
	c.m.Range(func(k, v any) bool {
		if e := v.(*cachedSeq); !e.used.Swap(false) && c.m.CompareAndDelete(k, v) {
			c.n.Add(-1)
		}
		return true
	})
}

// len returns the number of sequences held.
func (c *seqCache) len() int64 { return c.n.Load() }
