package autokeys

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/sequence"
	"go.mongodb.org/mongo-driver/mongo"
)

// Keys fills the zero `auto:"inc"` and `auto:"uuid"` fields of a model
// on BeforeConvert, and never touches fields that are set, so an update
// keeps its keys. An InsertMany takes the numbers for all its models with
// one counter round trip. An upsert (UpdateOne, UpdateMany or
// FindOneAndUpdate with SetUpsert(true)) gets its keys as $setOnInsert
// fields on BeforeUpdate (see upserts in docs/keys.md).
//
// It acts on the collection each event's repository writes to
// (events.Event.Coll). When the repository is created (see Prepare) it
// creates a unique index on each inc and uuid field there, and refuses
// the model when the data does not allow one (WithoutIndexes opts out),
// and moves each counter past the largest value already in that
// collection.
// When a write later fails on a duplicate key because a counter is behind
// the data (a restored backup, a manual edit), it moves the counter past
// the collection's maximum and asks the repository to retry. A numeric
// inc key the caller sets above three quarters of the field's range, and
// ahead of the counter, is refused: the counter, moved past it, would
// have no room for a block after it.
type Keys struct {
	alloc   *sequence.Allocator
	indexes bool
	now     func() time.Time
	logger  *slog.Logger
	sources []ScopeSource // what fills the scope fields a policy sets
	plans   sync.Map      // reflect.Type -> *plan
	fields  numberings    // what numbers each key field of each collection
	upserts upserts       // the numbers each running upsert reserved
}

// New returns the listener. db holds the counters collection, and
// may differ from the databases the repositories write to, by design: one
// counters database can number the models of many. The unique indexes and
// the checks against the data go to the collection each repository writes
// to. It applies WithAllocator, WithSequenceOptions, WithoutIndexes,
// WithClock, WithLogger and WithScopeSource.
func New(db *mongo.Database, opts ...Option) (*Keys, error) {
	if db == nil {
		return nil, fmt.Errorf("autokeys: New(nil): need the database that holds the counters: %w", sequence.ErrInvalidArgument)
	}
	o, err := apply(opts)
	if err != nil {
		return nil, fmt.Errorf("autokeys: New: %w", err)
	}
	k := &Keys{indexes: !o.noIndexes, now: o.now, logger: o.logger, sources: o.sources, alloc: o.alloc}
	if k.alloc == nil {
		if k.alloc, err = sequence.New(db, o.seqOpts...); err != nil {
			return nil, fmt.Errorf("autokeys: New: %w", err)
		}
	}
	return k, nil
}

// Allocator returns the allocator Keys takes numbers from.
func (k *Keys) Allocator() *sequence.Allocator { return k.alloc }

// Close gives back the numbers Keys reserved and has not handed out, so
// that the next process continues without a gap; call it when the
// application stops, after its last insert. It closes the allocator (also
// one given with WithAllocator): afterwards an insert that needs a number
// fails with sequence.ErrClosed. What is given back and what is lost is
// sequence.Allocator.Close's: the unused rest of each sequence's blocks,
// where no other process reserved after this one; an error (ctx ended,
// the server failed) wraps sequence.ErrNotGivenBack and names the numbers
// lost. Lost numbers are a gap and never a duplicate: no allocator hands
// them out. Every later call returns what the first returned.
func (k *Keys) Close(ctx context.Context) error { return k.alloc.Close(ctx) }

// Essential marks Keys as an events.Essential listener: keys are part
// of the data, so Keys runs when events are switched off too.
func (*Keys) Essential() {}

// EventTypes tells the bus that Keys handles BeforeConvert, and
// BeforeUpdate and AfterUpdate for upserts.
func (k *Keys) EventTypes() []events.Type {
	return []events.Type{events.BeforeConvert, events.BeforeUpdate, events.AfterUpdate}
}

type plan struct {
	schema  *model.Schema
	fields  []*fieldPlan
	targets sync.Map // collKey -> *target
}

type fieldPlan struct {
	*model.AutoField
	seq     *sequence.Sequence // undated inc
	opts    []sequence.Option
	periods seqCache      // dated or scoped inc
	fill    []ScopeSource // per scope field, what fills it, or nil
}

var _ events.Preparer = (*Keys)(nil)

// Prepare readies model type t for coll, the collection its repository
// writes to, when the repository is created (repo.New), so that what
// would go wrong at the first write is an error now:
//   - a sequence shared with other options elsewhere (sequence.ErrConflict);
//   - another model of coll's collection (its database and name) whose
//     field of the same name is numbered otherwise: another kind, sequence,
//     scope or format (ErrConflict, naming both models);
//   - a unique index on a key field that coll's data does not allow, such as
//     a duplicate number already stored (ErrNoUniqueIndex, naming the
//     collection, the field, the index and the cause).
//
// It then makes the unique indexes in coll and moves the counters past
// coll's data. With WithoutIndexes it makes none, and logs at Warn the
// fields it leaves unprotected.
func (k *Keys) Prepare(t reflect.Type, coll *mongo.Collection) error {
	p, err := k.plan(t)
	if err != nil || len(p.fields) == 0 || coll == nil {
		return err
	}
	if err := k.fields.claim(p, coll); err != nil {
		return err
	}
	if !k.indexes {
		k.warnUnprotected(p, coll)
	}
	return k.ensure(p, p.targetOf(coll))
}

func (k *Keys) plan(t reflect.Type) (*plan, error) {
	if p, ok := k.plans.Load(t); ok {
		return p.(*plan), nil
	}
	s, err := model.Of(t)
	if err != nil {
		return nil, err
	}
	p := &plan{schema: s}
	for i := range s.Auto {
		a := &s.Auto[i]
		if a.Kind != model.Inc && a.Kind != model.UUID {
			continue
		}
		f := &fieldPlan{AutoField: a}
		if err := k.fillers(s, f); err != nil {
			return nil, err
		}
		if a.Kind == model.Inc {
			f.opts = []sequence.Option{sequence.WithStart(a.Start)}
			if a.Batch > 0 {
				f.opts = append(f.opts, sequence.WithBatch(a.Batch))
			}
			seq, err := k.alloc.Sequence(a.Seq, f.opts...)
			if err != nil {
				return nil, fmt.Errorf("autokeys: %v field %s: %w", t, a.Name, err)
			}
			f.seq = seq
		}
		p.fields = append(p.fields, f)
	}
	v, _ := k.plans.LoadOrStore(t, p)
	return v.(*plan), nil
}

// fillers finds, for each scope field of f, the source that fills it. A
// scope field that a `policy` tag names and no source fills is refused:
// its policy may set it, or store it changed, after Keys has numbered.
func (k *Keys) fillers(s *model.Schema, f *fieldPlan) error {
	for i := range f.Scope {
		sf := &f.Scope[i]
		var fill ScopeSource
		for _, src := range k.sources {
			if src.FillsScope(s, sf) {
				fill = src
				break
			}
		}
		if p := s.PolicyOf(sf.BSON); p != nil && fill == nil {
			return fmt.Errorf("autokeys: %v field %s `auto:\"%s\"`: scope field %s is a `%s` field, which its policy may set or store changed after AutoKeys numbers the model: give autokeys.New autokeys.WithScopeSource(the policy), for a policy that fills it (tenancy does): %w",
				s.Type, f.Name, f.Tag, sf.Name, p.Tag, sequence.ErrInvalidArgument)
		}
		f.fill = append(f.fill, fill)
	}
	return nil
}

// HandleEvent fills the zero auto fields of e.Model, or, in an InsertMany,
// of every model from e.Model to the end of the batch.
func (k *Keys) HandleEvent(ctx context.Context, e *events.Event) error {
	switch e.Type {
	case events.BeforeUpdate:
		return k.upsert(ctx, e)
	case events.AfterUpdate:
		k.putBack(e)
		return nil
	}
	if e.Type != events.BeforeConvert || e.Model == nil {
		return nil
	}
	p, t, err := k.ready(ctx, e)
	if p == nil {
		return err
	}
	mv := reflect.ValueOf(e.Model).Elem()
	for _, f := range p.fields {
		fv := f.Value(mv)
		if !fv.IsZero() {
			if err := k.refuseTopKeyOf(ctx, p, t, f, mv); err != nil {
				return err
			}
			continue
		}
		var err error
		if e.Batch == nil {
			var sc scope
			if sc, err = k.scopeOf(ctx, p, f, mv); err != nil {
				return err
			}
			one := [1]reflect.Value{fv}
			err = k.fillValues(ctx, p, t, f, sc, one[:])
		} else {
			// The first model of a batch that lacks this key gets it for
			// the whole rest of the batch, from one reservation (one per
			// scope for a scoped key); the later models then have
			// it, and cost one check each.
			err = k.fill(ctx, p, t, f, e.Batch[e.Index:])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ready returns the plan of e's model type, and its target for e's
// collection with its indexes made and counters checked, or nil when the
// type has no keys to fill or on an error.
func (k *Keys) ready(ctx context.Context, e *events.Event) (*plan, *target, error) {
	p, err := k.plan(e.ModelType)
	if err != nil || len(p.fields) == 0 {
		return nil, nil, err
	}
	t, err := p.target(e)
	if err != nil {
		return nil, nil, err
	}
	if err := k.ensure(p, t); err != nil {
		return nil, nil, err
	}
	return p, t, nil
}

// fieldErr prefixes err with p's model type and f's name.
func fieldErr(p *plan, f *fieldPlan, err error) error {
	return fmt.Errorf("%v field %s: %w", p.schema.Type, f.Name, err)
}
