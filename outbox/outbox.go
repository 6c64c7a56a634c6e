package outbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// Errors of the outbox.
var (
	// ErrFull: the write would leave more undelivered events in one
	// document than WithMaxPending or WithMaxPendingBytes allow; nothing
	// was written.
	ErrFull = errors.New("outbox: too many undelivered events in one document")
	// ErrUnsupported: the operation cannot store events atomically (an
	// update or delete of many documents with events recorded, an update
	// that writes Field, a model without a Recorder), so it is refused
	// rather than losing them.
	ErrUnsupported = errors.New("outbox: events cannot be stored by this operation")
	// ErrNotStored: a Delete of a model, with events recorded, matched no
	// document (it was deleted already), so the events were stored
	// nowhere; they stay recorded. (Operations that return a result with
	// a count, such as UpdateOne and DeleteOne, return one that counts 0
	// instead, and the events stay recorded too.)
	ErrNotStored = errors.New("outbox: the write matched no document; its events are not stored")
)

// Default limits of undelivered events per document.
const (
	DefaultMaxPending      = 1000
	DefaultMaxPendingBytes = 1 << 20
)

// Option configures New.
type Option func(*Outbox)

// WithMaxPending sets how many undelivered events one document may hold;
// the default is DefaultMaxPending.
func WithMaxPending(n int) Option { return func(o *Outbox) { o.maxEvents = n } }

// WithMaxPendingBytes sets how many bytes of undelivered events (data,
// type and ID) one document may hold; the default is
// DefaultMaxPendingBytes, far below MongoDB's 16 MB document limit.
func WithMaxPendingBytes(n int) Option { return func(o *Outbox) { o.maxBytes = int64(n) } }

// Outbox is the policy listener that stores recorded events in the
// documents of models that embed a Recorder, in the same write as the
// change (see Field for the layout), so that they are stored exactly when
// the change is:
//
//   - Insert and InsertMany put them in the new document; Save, Update,
//     UpdateOne, FindOneAndUpdate (upserts included) add them with update
//     operators. A Save is sent as an update, so that it keeps the events
//     an earlier write left and never brings back delivered ones.
//   - A write that would leave more than WithMaxPending events or
//     WithMaxPendingBytes bytes undelivered in the document fails with
//     ErrFull and writes nothing: the limit is a condition of the write,
//     checked by the server against the stored document.
//   - Delete keeps the document as a tombstone, holding its events, that
//     no read sees (filters, and the pipelines of Aggregate and Watch, get
//     a condition, which Check verifies after every listener); a Relay
//     delivers the events and then removes it. A soft delete stays a
//     soft delete, with the events.
//   - Writes of many documents with events recorded, and updates that
//     write Field, get ErrUnsupported.
//
// It is a policy (events.Policy): switching events off does not switch
// it off. Register it once per bus; a Relay delivers what it stores.
//
// On FerretDB 1.x, whose updates rewrite the whole document, so that
// concurrent updates of one document on two connections can erase each
// other, it refuses with ErrUnsupported every write of a model that embeds
// a Recorder through a client with more than one connection: there,
// writers and relays share one client with maxPoolSize 1 (docs/outbox.md).
type Outbox struct {
	maxEvents int
	maxBytes  int64
	now       func() time.Time
	kinds     *policy.Table[kind] // per model and per collection
	sources   sync.Map            // sourceKey -> struct{}: registered in Sources
}

// New returns the outbox policy.
func New(opts ...Option) *Outbox {
	o := &Outbox{maxEvents: DefaultMaxPending, maxBytes: DefaultMaxPendingBytes, now: time.Now, kinds: policy.NewTable(kindOf)}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// EnforcesPolicy marks the outbox as an events.Policy.
func (*Outbox) EnforcesPolicy() {}

// PolicyTag is the policy tag of models that embed a Recorder (see
// model.NeedsPolicy), which the outbox enforces.
const PolicyTag = "outbox"

// EnforcesTags tells repositories (events.TagEnforcer) that the outbox
// stores the events of models that embed a Recorder.
func (*Outbox) EnforcesTags() []string { return []string{PolicyTag} }

// EventTypes tells the bus which events the outbox handles.
func (*Outbox) EventTypes() []events.Type {
	return []events.Type{events.BeforeQuery, events.BeforeSave, events.BeforeUpdate, events.BeforeDelete,
		events.AfterSave, events.AfterUpdate, events.AfterDelete}
}

// kind is what the outbox knows of a model type.
type kind struct {
	records     bool   // it embeds a Recorder
	tenantField string // its tenant field, or ""
}

func (o *Outbox) kind(t reflect.Type) kind {
	k, _, _ := o.kinds.Model(t)
	return k
}

// kindOf derives a model's kind from its schema s.
func kindOf(s *model.Schema) (kind, bool, error) {
	k := kind{records: s.Type.Implements(reflect.TypeFor[holder]())}
	if t := s.Policy("tenant"); len(t) > 0 { // tenancy's field, which it checks
		k.tenantField = t[0].BSON
	}
	return k, k.records, nil
}

// Prepare records the collection of every model a repository is created
// for on the bus, and whether its documents hold events, so that a
// pipeline stage that reaches it from any model skips tombstones and
// writes none of its documents.
func (o *Outbox) Prepare(mt reflect.Type, coll *mongo.Collection) error {
	_, _, err := o.kinds.Prepare(mt, coll)
	return err
}

// reaches confines, or when final checks, every stage of e's pipeline
// that reaches a collection whose documents hold events: a read skips
// tombstones, a write is refused, since it could erase undelivered events
// or queue events no write recorded.
func (o *Outbox) reaches(e *events.Event, final bool) error {
	return o.kinds.Confine(e, final, func(r *mql.Reach, _ kind) (bson.E, bool, error) {
		if r.Writes {
			return bson.E{}, false, fmt.Errorf("%w: a pipeline may not write a collection whose documents hold outbox events", ErrUnsupported)
		}
		return hidden, true, nil
	})
}

// hidden is the condition that keeps tombstones out of every read.
var hidden = bson.E{Key: path(partGone), Value: bson.D{{Key: "$exists", Value: false}}}

// HandleEvent applies the outbox to e.
func (o *Outbox) HandleEvent(ctx context.Context, e *events.Event) error {
	if e.Type == events.BeforeQuery && policy.Pipelined(e) {
		if err := o.reaches(e, false); err != nil {
			return err
		}
	}
	k := o.kind(e.ModelType)
	rec := recorderFrom(ctx)
	if e.Op == events.OpInsertMany {
		rec = nil // one event cannot belong to many documents
	}
	if !k.records {
		switch e.Type {
		case events.BeforeSave, events.BeforeUpdate, events.BeforeDelete:
			if rec != nil && len(rec.events) > 0 {
				return fmt.Errorf("%w: %v does not embed outbox.Recorder, so its documents could be deleted with undelivered events", ErrUnsupported, e.ModelType)
			}
		}
		return nil
	}
	switch e.Type {
	case events.BeforeSave, events.BeforeUpdate, events.BeforeDelete:
		if e.Coll == nil {
			return fmt.Errorf("outbox: the %v event carries no collection", e.Type)
		}
		if err := serialized(ctx, e.Coll.Database(), fmt.Sprintf("%v of %v", e.Op, e.ModelType)); err != nil {
			return err
		}
	}
	switch e.Type {
	case events.BeforeQuery:
		var err error
		if policy.Pipelined(e) {
			e.Pipeline, err = mql.PrependMatch(e.Pipeline, policy.Stored(e, hidden))
		} else {
			e.Filter = mql.And(e.Filter, hidden)
		}
		return err
	case events.BeforeSave:
		return o.beforeSave(ctx, e, k, rec)
	case events.BeforeUpdate:
		return o.beforeUpdate(ctx, e, k, rec)
	case events.BeforeDelete:
		return o.beforeDelete(ctx, e, k, rec)
	case events.AfterSave:
		done(modelRecorder(e), rec)
	case events.AfterUpdate:
		if e.MatchedCount+e.UpsertedCount > 0 {
			done(nil, rec)
		}
	case events.AfterDelete:
		if e.DeletedCount > 0 {
			done(modelRecorder(e), rec)
		} else if e.Op == events.OpDelete {
			// Delete returns no count that would tell the caller.
			return unstored(e, modelRecorder(e), rec)
		}
	}
	return nil
}

// unstored returns ErrNotStored when the delete, which matched no
// document, carried events of recs.
func unstored(e *events.Event, recs ...*Recorder) error {
	n := 0
	for _, r := range recs {
		if r != nil {
			n += r.sending
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: %v of %v %v matched no document (deleted already?), so its %d events are not stored; they stay recorded",
		ErrNotStored, e.Op, e.ModelType, idOf(e), n)
}

func modelRecorder(e *events.Event) *Recorder {
	if h, ok := e.Model.(holder); ok {
		return h.outboxRecorder()
	}
	return nil
}

// done empties the recorders of what the write stored.
func done(recs ...*Recorder) {
	for _, r := range recs {
		if r != nil {
			r.stored()
		}
	}
}

// take returns the events this write stores, the model's then the
// context's, and marks them as being sent.
func take(recs ...*Recorder) []Recorded {
	var out []Recorded
	for _, r := range recs {
		if r == nil {
			continue
		}
		r.sending = len(r.events)
		out = append(out, r.events...)
	}
	return out
}
