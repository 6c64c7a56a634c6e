// Package policy is what policies are written with, the built-in ones and
// an application's own alike. A policy governs collections, not models:
// whatever model or pipeline stage reaches a collection it governs, it
// confines the operation or refuses it. A Table keeps, per model type and
// per collection, what the policy derives from a model's schema, learned
// from the repositories created on its bus (events.Preparer), and walks
// the stages of a pipeline that reach collections, refusing those that
// reach a collection no repository of the bus serves, since the policy
// cannot tell whether it governs it.
//
// A policy's fields carry a `policy:"NAME[,OPTION...]"` tag, which package
// model parses without knowing the name (model.PolicyField). The policy
// reads its fields with model.Schema.Policy(NAME) in its Derive, refuses
// there what it cannot govern (an option it does not know, a field of the
// wrong type, with model.PolicyField.Err naming the type, the field and
// the tag), and names itself in EnforcesTags (events.TagEnforcer), so
// that repo.New refuses its models on a bus without it. The built-in
// policies do no more.
//
// A policy in one file:
//
//	type Region struct{ table *policy.Table[string] }
//
//	func (r *Region) Prepare(t reflect.Type, coll *mongo.Collection) error {
//		_, _, err := r.table.Prepare(t, coll)
//		return err
//	}
//
// See the package Example for the whole of such a policy.
package policy

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// Derive makes what a policy keeps for a model type from the type's
// schema: v, and whether the policy governs the model's collection.
type Derive[T any] func(s *model.Schema) (v T, governs bool, err error)

// Table keeps what a policy derives from each model type, and what it
// keeps for each collection that a repository on its bus serves. It is
// safe for concurrent use. Create one with NewTable.
type Table[T any] struct {
	derive Derive[T]
	types  sync.Map // reflect.Type -> *entry[T]
	colls  sync.Map // collKey -> *entry[T]
	mu     sync.Mutex
}

type entry[T any] struct {
	v       T
	governs bool
	err     error
}

type collKey struct{ db, coll string }

// NewTable returns an empty table that derives with derive.
func NewTable[T any](derive Derive[T]) *Table[T] { return &Table[T]{derive: derive} }

// Model returns what the table derived from model type t, deriving it
// once, on the first call for t; governs reports whether the policy
// governs t's collection.
func (t *Table[T]) Model(mt reflect.Type) (v T, governs bool, err error) {
	if e, ok := t.types.Load(mt); ok {
		en := e.(*entry[T])
		return en.v, en.governs, en.err
	}
	en := new(entry[T])
	s, err := model.Of(mt)
	if err == nil {
		en.v, en.governs, en.err = t.derive(s)
	} else {
		en.err = err
	}
	e, _ := t.types.LoadOrStore(mt, en)
	en = e.(*entry[T])
	return en.v, en.governs, en.err
}

// Prepare records that a repository of model type mt serves coll, and
// returns what Model returns for mt. Call it from the policy's Prepare
// (events.Preparer), which every repository created on the bus calls,
// for every model. Once one model governs a collection, the collection
// stays governed by what that model gave: a later model of it that the
// policy does not govern changes nothing.
func (t *Table[T]) Prepare(mt reflect.Type, coll *mongo.Collection) (v T, governs bool, err error) {
	v, governs, err = t.Model(mt)
	if err != nil || coll == nil {
		return v, governs, err
	}
	k := collKey{coll.Database().Name(), coll.Name()}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.colls.Load(k); ok && (old.(*entry[T]).governs || !governs) {
		return v, governs, nil
	}
	t.colls.Store(k, &entry[T]{v: v, governs: governs})
	return v, governs, nil
}

// Collection returns what the table keeps for collection coll of
// database db: known reports whether a repository on the bus serves it,
// and governs whether the policy governs it.
func (t *Table[T]) Collection(db, coll string) (v T, governs, known bool) {
	e, ok := t.colls.Load(collKey{db, coll})
	if !ok {
		return v, false, false
	}
	en := e.(*entry[T])
	return en.v, en.governs, true
}

// Reaches walks the stages of e's pipeline (Aggregate, Watch) that reach
// a collection (see mql.Reaches) and calls visit for each whose
// collection the policy governs, with what the table keeps for it. A
// stage that reaches a collection that no repository on the bus serves
// is refused: the error wraps events.ErrUnguardedQuery. It returns the
// pipeline as visit left it, for the policy to assign to e.Pipeline on
// HandleEvent (Check only reads it), or nil when e has no pipeline.
func (t *Table[T]) Reaches(e *events.Event, visit func(r *mql.Reach, v T) error) ([]bson.D, error) {
	if e.Pipeline == nil {
		return nil, nil
	}
	db := ""
	if e.Coll != nil {
		db = e.Coll.Database().Name()
	}
	st, err := mql.Reaches(e.Pipeline, func(r *mql.Reach) error {
		if r.Coll == "" {
			return nil
		}
		in := db
		if r.DB != "" {
			in = r.DB
		}
		v, governs, known := t.Collection(in, r.Coll)
		switch {
		case !known:
			return fmt.Errorf("%w: %s: %s reaches collection %q of database %q, which no repository on this bus serves, so no policy can tell whether it governs it; create its repository (repo.New) before running the pipeline",
				events.ErrUnguardedQuery, r.Where, r.Stage, r.Coll, in)
		case !governs:
			return nil
		}
		if err := visit(r, v); err != nil {
			return fmt.Errorf("%s: %s of collection %q: %w", r.Where, r.Stage, r.Coll, err)
		}
		return nil
	})
	if err != nil && errors.Is(err, mql.ErrBadDocument) && !errors.Is(err, events.ErrUnguardedQuery) {
		err = fmt.Errorf("%w: %w", events.ErrUnguardedQuery, err) // what cannot be read is not sent
	}
	return st, err
}

// Pipelined reports whether e's query is its Pipeline (Aggregate, Watch)
// rather than its Filter, which is then nil: a policy confines the
// pipeline, with a leading $match (mql.PrependMatch).
func Pipelined(e *events.Event) bool { return e.Op == events.OpAggregate || e.Op == events.OpWatch }

// Stored returns cond, a condition on a stored document's field, as e's
// pipeline states it: under "fullDocument." for a change stream (Watch),
// whose stages see change events, and as it is for an Aggregate.
func Stored(e *events.Event, cond bson.E) bson.E {
	if e.Op == events.OpWatch {
		cond.Key = "fullDocument." + cond.Key
	}
	return cond
}

// Rule is what a policy decides for a stage that reaches a collection it
// governs: the condition that confines a reading stage, confine false to
// leave it as it is, or an error that refuses it (a writing stage, which
// no condition confines, say).
type Rule[T any] func(r *mql.Reach, v T) (cond bson.E, confine bool, err error)

// Confine applies rule to every stage of e's pipeline that reaches a
// collection the policy governs (see Reaches): on HandleEvent it confines
// each, and assigns the result to e.Pipeline; with final, on Check, it
// only verifies that each is still confined, after every listener ran,
// and fails with events.ErrUnguardedQuery when one is not.
func (t *Table[T]) Confine(e *events.Event, final bool, rule Rule[T]) error {
	st, err := t.Reaches(e, func(r *mql.Reach, v T) error {
		cond, confine, err := rule(r, v)
		switch {
		case err != nil || !confine:
			return err
		case !final:
			return r.Confine(cond)
		}
		ok, err := r.Confined(cond)
		if err == nil && !ok {
			err = fmt.Errorf("%w: a listener removed the condition on %s from the stage", events.ErrUnguardedQuery, cond.Key)
		}
		return err
	})
	if err == nil && !final && st != nil {
		e.Pipeline = st
	}
	return err
}
