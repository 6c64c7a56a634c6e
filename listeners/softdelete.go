package listeners

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
)

type withDeletedKey struct{}
type hardDeleteKey struct{}

// WithDeleted returns a context under which reads, counts, aggregates and
// updates see soft-deleted documents too; restore one with an UpdateOne
// under it that unsets the deletedAt field.
func WithDeleted(ctx context.Context) context.Context {
	return context.WithValue(ctx, withDeletedKey{}, true)
}

// HardDelete returns a context under which deletes remove documents for
// real. With WithDeleted too, they purge soft-deleted ones.
func HardDelete(ctx context.Context) context.Context {
	return context.WithValue(ctx, hardDeleteKey{}, true)
}

// SoftDeleteOption configures SoftDelete.
type SoftDeleteOption func(*SoftDelete)

// WithDeleter sets who deletes, for an audit:"deletedBy" field; Auditing's
// auditor will do.
func WithDeleter(a Auditor) SoftDeleteOption { return func(s *SoftDelete) { s.deleter = a } }

// WithDeleteClock sets the clock; the default is time.Now.
func WithDeleteClock(now func() time.Time) SoftDeleteOption {
	return func(s *SoftDelete) { s.now = now }
}

// SoftDelete marks documents deleted instead of removing them, for models
// with an audit:"deletedAt" field (time.Time, *time.Time or
// primitive.DateTime), like GORM's DeletedAt and mongoose-delete. It is a
// policy (events.Policy), so switching events off does not switch it off.
//
//   - Delete, DeleteMany and FindOneAndDelete set deletedAt (and an
//     audit:"deletedBy" field, from WithDeleter) instead of deleting;
//     BeforeDelete and AfterDelete still fire, and the count is the number
//     of documents marked.
//   - Every filter and pipeline skips marked documents, unless the context
//     is WithDeleted: reads, counts, Distinct, Aggregate, updates and
//     deletes. FindByID of a marked document gives repo.ErrNotFound.
//   - HardDelete(ctx) deletes for real; with WithDeleted too it purges
//     marked documents.
//
// Models without the field are untouched.
type SoftDelete struct {
	now     func() time.Time
	deleter Auditor
}

// NewSoftDelete returns the policy.
func NewSoftDelete(opts ...SoftDeleteOption) *SoftDelete {
	s := &SoftDelete{now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// EnforcesPolicy marks SoftDelete as an events.Policy.
func (*SoftDelete) EnforcesPolicy() {}

// EventTypes tells the bus which events SoftDelete handles.
func (*SoftDelete) EventTypes() []events.Type {
	return []events.Type{events.BeforeQuery, events.BeforeDelete}
}

// HandleEvent applies the policy to e.
func (d *SoftDelete) HandleEvent(ctx context.Context, e *events.Event) error {
	s, err := model.Of(e.ModelType)
	if err != nil {
		return err
	}
	at := s.AuditOf(model.DeletedAt)
	if at == nil {
		return nil
	}
	switch e.Type {
	case events.BeforeQuery:
		if ctx.Value(withDeletedKey{}) != nil {
			return nil
		}
		live := liveCondition(at)
		if e.Op == events.OpAggregate {
			st, err := events.Stages(e.Pipeline)
			if err != nil {
				return err
			}
			e.Pipeline = append([]bson.D{{{Key: "$match", Value: bson.D{live}}}}, st...)
			return nil
		}
		e.Filter = events.And(e.Filter, live)
	case events.BeforeDelete:
		if ctx.Value(hardDeleteKey{}) != nil {
			return nil
		}
		set := bson.D{{Key: at.BSON, Value: d.now().UTC().Truncate(time.Millisecond)}}
		if by := s.AuditOf(model.DeletedBy); by != nil && d.deleter != nil {
			who, err := d.deleter(ctx)
			if err != nil {
				return fmt.Errorf("deleter: %w", err)
			}
			if who != nil {
				w, err := whoAs(s, by, who)
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

// liveCondition matches documents that are not marked: the field missing
// or null, or holding the zero value of its type (a time.Time stored
// without omitempty).
func liveCondition(at *model.AuditField) bson.E {
	if at.Type.Kind() == reflect.Pointer {
		return bson.E{Key: at.BSON, Value: nil}
	}
	zero := reflect.Zero(at.Type).Interface()
	return bson.E{Key: at.BSON, Value: bson.D{{Key: "$in", Value: bson.A{nil, zero}}}}
}
