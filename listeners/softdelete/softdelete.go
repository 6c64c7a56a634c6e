// Package softdelete marks documents deleted instead of removing them, for
// models with a policy:"softdelete,at" field, as one policy (events.Policy): a
// hook that turns each delete into an update, and a query condition that
// hides marked documents from every read.
package softdelete

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// ErrDeleted: Save or Update of a model whose document is soft-deleted.
// Nothing was written. Restore the document first (RestoreModel), or write
// the model under WithDeleted.
var ErrDeleted = errors.New("softdelete: the document is soft-deleted")

type withDeleted struct{}
type hardDelete struct{}

// withDeletedKey and hardDeleteKey are the context keys of WithDeleted and
// HardDelete.
var (
	withDeletedKey = withDeleted{}
	hardDeleteKey  = hardDelete{}
)

// WithDeleted returns a context under which reads, counts, aggregates and
// updates see soft-deleted documents too; Restore brings them back.
func WithDeleted(ctx context.Context) context.Context {
	return context.WithValue(ctx, withDeletedKey, true)
}

// HardDelete returns a context under which deletes remove documents for
// real. With WithDeleted too, they purge soft-deleted ones.
func HardDelete(ctx context.Context) context.Context {
	return context.WithValue(ctx, hardDeleteKey, true)
}

// Option configures SoftDelete.
type Option func(*SoftDelete)

// WithActor sets who deletes, for a policy:"softdelete,by" field; the auditor
// given to listeners.WithAuditor will do. who reads the context the
// operation runs on.
func WithActor(who func(ctx context.Context) (any, error)) Option {
	return func(s *SoftDelete) { s.deleter = who }
}

// WithClock sets the clock; the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *SoftDelete) { s.now = now }
}

// SoftDelete marks documents deleted instead of removing them, for models
// with a policy:"softdelete,at" field (time.Time, *time.Time or
// primitive.DateTime), like GORM's DeletedAt and mongoose-delete. It is a
// policy (events.Policy), so switching events off does not switch it off,
// and its Check verifies after all listeners that it still holds.
//
//   - Delete, DeleteOne, DeleteMany and FindOneAndDelete set the
//     policy:"softdelete,at" mark (and a policy:"softdelete,by" field, from WithActor)
//     on live documents instead of deleting; BeforeDelete and AfterDelete
//     still fire, and the count is the number of documents marked.
//   - Every filter and pipeline skips marked documents, unless the context
//     is WithDeleted: reads, counts, Distinct, Aggregate, Watch (on the
//     change's full document), updates and deletes. FindByID of a marked
//     document gives repo.ErrNotFound. Save and Update of a model whose
//     document is marked write nothing and give ErrDeleted (the write is guarded, see events.Event.AddGuard). A
//     stage of any model's pipeline that reads a soft-deleted collection
//     skips its marked documents unless WithDeleted, and one that writes
//     it ($out, $merge) is refused unless HardDelete (see listeners/policy).
//   - HardDelete(ctx) deletes for real; with WithDeleted too it purges
//     marked documents.
//   - What a listener adds to a write (events.Event's Extra and Tombstone)
//     may not write the softdelete fields, by a $rename's target either:
//     events.ErrUnguardedQuery.
//
// Models without the field are untouched.
type SoftDelete struct {
	now     func() time.Time
	deleter func(ctx context.Context) (any, error)
	table   *policy.Table[marks] // per model and per collection
}

// New returns the policy.
func New(opts ...Option) *SoftDelete {
	s := &SoftDelete{now: time.Now, table: policy.NewTable(marksOf)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// EnforcesPolicy marks SoftDelete as an events.Policy.
func (*SoftDelete) EnforcesPolicy() {}

// EnforcesTags reports that SoftDelete enforces policy:"softdelete" tags
// (events.TagEnforcer).
func (*SoftDelete) EnforcesTags() []string { return []string{"softdelete"} }

// EventTypes tells the bus which events SoftDelete handles.
func (*SoftDelete) EventTypes() []events.Type {
	return []events.Type{events.BeforeQuery, events.BeforeDelete, events.AfterDelete, events.BeforeConvert, events.BeforeSave, events.BeforeUpdate}
}

// byModel reports whether e is a write of a model by its _id (Save of a
// stored model, Update): the marked document is then refused by a guard,
// with ErrDeleted, rather than left out of the filter, which would make
// the write miss (Update) or insert a duplicate _id (Save's upsert).
func byModel(e *events.Event) bool { return e.Op == events.OpReplace || e.Op == events.OpUpdate }

// deletedError is the error of a write of the model of e whose document
// is marked.
func deletedError(e *events.Event, at *model.Field) error {
	var id any = "(no ID)"
	if m, ok := e.Model.(interface{ GetID() any }); ok {
		id = m.GetID()
	}
	return fmt.Errorf("%w: %v %v (marked in %s): restore it first with softdelete.RestoreModel, or write it under softdelete.WithDeleted",
		ErrDeleted, e.ModelType, id, at.BSON)
}

// Prepare records the collection of every model a repository is created
// for on the bus, and whether its documents are soft-deleted, so that a
// pipeline stage that reaches it from any model skips marked documents.
func (d *SoftDelete) Prepare(mt reflect.Type, coll *mongo.Collection) error {
	_, _, err := d.table.Prepare(mt, coll)
	return err
}

// mark returns the model's softdelete fields and its
// policy:"softdelete,at" field, or a nil field when it has none or on an
// error. It first judges, for a query by a pipeline, the stages that reach
// collections (final in Check), which the policy confines whatever the
// model.
func (d *SoftDelete) mark(ctx context.Context, e *events.Event, final bool) (marks, *model.Field, error) {
	if e.Type == events.BeforeQuery && policy.Pipelined(e) {
		if err := d.reaches(ctx, e, final); err != nil {
			return marks{}, nil, err
		}
	}
	m, _, err := d.table.Model(e.ModelType)
	return m, m.at, err
}

// reaches confines, or when final checks, every stage of e's pipeline
// that reaches a collection of soft-deleted documents: a read skips
// marked documents (unless WithDeleted), a write is refused (unless
// HardDelete), since $out or $merge would replace or overwrite marked
// documents.
func (d *SoftDelete) reaches(ctx context.Context, e *events.Event, final bool) error {
	return d.table.Confine(e, final, func(r *mql.Reach, m marks) (bson.E, bool, error) {
		if r.Writes && ctx.Value(hardDeleteKey) == nil {
			return bson.E{}, false, fmt.Errorf("%w: a pipeline that writes a collection of soft-deleted documents would remove marked documents; run it under softdelete.HardDelete if it is meant to", events.ErrUnguardedQuery)
		}
		return liveCondition(m.at), !r.Writes && ctx.Value(withDeletedKey) == nil, nil
	})
}

// hides reports whether e's filter must skip marked documents: unless
// WithDeleted; and a soft delete always marks live documents only, so that
// a mark is never overwritten.
func hides(ctx context.Context, e *events.Event) bool {
	switch e.Op {
	case events.OpDelete, events.OpDeleteOne, events.OpDeleteMany, events.OpFindOneAndDelete:
		if ctx.Value(hardDeleteKey) == nil {
			return true
		}
	}
	return ctx.Value(withDeletedKey) == nil
}

// HandleEvent applies the policy to e.
func (d *SoftDelete) HandleEvent(ctx context.Context, e *events.Event) error {
	m, at, err := d.mark(ctx, e, false)
	if at == nil {
		return err
	}
	switch e.Type {
	case events.AfterDelete:
		if ctx.Value(hardDeleteKey) == nil {
			m.keepUp(e)
		}
	case events.BeforeConvert:
		if byModel(e) && hides(ctx, e) {
			e.AddGuard(liveCondition(at), deletedError(e, at))
		}
	case events.BeforeQuery:
		if !hides(ctx, e) || byModel(e) {
			return nil
		}
		live := liveCondition(at)
		if policy.Pipelined(e) { // stages that reach collections are confined above
			e.Pipeline, err = mql.PrependMatch(e.Pipeline, policy.Stored(e, live))
			if err == nil && e.Op == events.OpWatch {
				e.Pipeline, err = mql.PrependMatch(e.Pipeline, withDocument)
			}
			return err
		}
		e.Filter = mql.And(e.Filter, live)
	case events.BeforeDelete:
		if ctx.Value(hardDeleteKey) != nil {
			return nil
		}
		set := bson.D{{Key: at.BSON, Value: d.now().UTC().Truncate(time.Millisecond)}}
		if by := m.by; by != nil && d.deleter != nil {
			who, err := d.deleter(ctx)
			if err != nil {
				return fmt.Errorf("deleter: %w", err)
			}
			if who != nil {
				w, err := m.schema.Convert(by, who)
				if err != nil {
					return err
				}
				set = append(set, bson.E{Key: by.BSON, Value: w.Interface()})
			}
		}
		e.Update = bson.D{{Key: "$set", Value: set}}
	}
	return nil
}

// Check verifies, after every listener has run, that e still skips marked
// documents, that a delete still only marks, and that nothing a listener
// adds to the write (events.Event's Extra and Tombstone) writes the
// softdelete fields.
func (d *SoftDelete) Check(ctx context.Context, e *events.Event) error {
	m, at, err := d.mark(ctx, e, true)
	if at == nil {
		return err
	}
	if err := policy.RefuseAdded(e, events.ErrUnguardedQuery, "a softdelete field", m.names()...); err != nil {
		return err
	}
	switch e.Type {
	case events.BeforeConvert, events.BeforeSave:
		if !byModel(e) || !hides(ctx, e) {
			return nil
		}
		live := liveCondition(at)
		if !slices.ContainsFunc(e.Additions().Guards, func(g events.Guard) bool { return reflect.DeepEqual(g.Cond, live) }) {
			return fmt.Errorf("%w: a listener removed the guard that keeps the write off deleted documents", events.ErrUnguardedQuery)
		}
	case events.BeforeQuery:
		if !hides(ctx, e) || byModel(e) {
			return nil
		}
		var ok bool
		if policy.Pipelined(e) {
			ok, err = mql.LeadingMatchRequires(e.Pipeline, policy.Stored(e, liveCondition(at)))
			if ok && e.Op == events.OpWatch {
				ok, err = mql.LeadingMatchRequires(e.Pipeline, withDocument)
			}
		} else {
			ok, err = mql.Requires(e.Filter, liveCondition(at))
		}
		if err == nil && !ok {
			err = fmt.Errorf("%w: a listener removed the condition that skips deleted documents", events.ErrUnguardedQuery)
		}
		return err
	case events.BeforeDelete:
		if ctx.Value(hardDeleteKey) != nil {
			return nil
		}
		u, err := mql.ParseUpdate(e.Update)
		if err == nil && (u.IsPipeline() || !u.Touches(at.BSON)) {
			err = errors.New("the update does not set the mark")
		}
		if err != nil {
			return fmt.Errorf("%w: a listener undid the soft delete (use softdelete.HardDelete to delete for real): %w", events.ErrUnguardedQuery, err)
		}
	}
	return nil
}

// withDocument matches the change events that carry the full document: a
// live condition on "fullDocument." alone would match those that carry
// none (a delete, an update without the full document), whose fields or
// pre-image may be of a marked document.
var withDocument = bson.E{Key: "fullDocument", Value: bson.D{{Key: "$type", Value: "object"}}}

// liveCondition matches documents that are not marked: the field missing
// or null, or holding the zero value of its type (a time.Time stored
// without omitempty).
func liveCondition(at *model.Field) bson.E {
	if at.Type.Kind() == reflect.Pointer {
		return bson.E{Key: at.BSON, Value: nil}
	}
	zero := reflect.Zero(at.Type).Interface()
	return bson.E{Key: at.BSON, Value: bson.D{{Key: "$in", Value: bson.A{nil, zero}}}}
}
