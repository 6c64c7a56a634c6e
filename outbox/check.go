package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// Check verifies, after every listener, that reads still skip tombstones,
// that a delete still keeps the document, and that a write still carries
// the events it takes from the recorders.
func (o *Outbox) Check(ctx context.Context, e *events.Event) error {
	if e.Type == events.BeforeQuery && policy.Pipelined(e) {
		if err := o.reaches(e, true); err != nil {
			return err
		}
	}
	k := o.kind(e.ModelType)
	if !k.records {
		return nil
	}
	rec := recorderFrom(ctx)
	if e.Op == events.OpInsertMany {
		rec = nil
	}
	var ok bool
	var err error
	switch e.Type {
	case events.BeforeQuery:
		if policy.Pipelined(e) {
			ok, err = mql.LeadingMatchRequires(e.Pipeline, policy.Stored(e, hidden))
		} else {
			ok, err = mql.Requires(e.Filter, hidden)
		}
		if err == nil && !ok {
			err = errors.New("a listener removed the condition that hides deleted documents")
		}
	case events.BeforeSave:
		if e.Op.Replace() && !slices.Contains(e.Additions().Keep, Field) {
			err = errors.New("a listener dropped the outbox's Event.Keep, so a Save would wipe undelivered events")
		} else if sending(modelRecorder(e), rec) && !carries(e) {
			err = errors.New("a listener removed the events from the write")
		}
	case events.BeforeUpdate:
		if sending(rec) && !carries(e) {
			err = errors.New("a listener removed the events from the write")
		}
	case events.BeforeDelete:
		if e.Update == nil && !has(e.Additions().Tombstone, "$set", path(partGone)) {
			err = errors.New("a listener removed the tombstone, so the delete would lose undelivered events")
		} else if !has(e.Additions().Extra, "$min", path(partDue)) {
			err = errors.New("a listener removed the events from the write")
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return nil
}

func sending(recs ...*Recorder) bool {
	return slices.ContainsFunc(recs, func(r *Recorder) bool { return r != nil && r.sending > 0 })
}

// carries reports whether e's write still stores the events.
func carries(e *events.Event) bool {
	if e.Op == events.OpInsert || e.Op == events.OpInsertMany {
		_, err := e.Document.LookupErr(Field)
		return err == nil
	}
	return has(e.Additions().Extra, "$push", path(partQueue))
}

// has reports whether ops holds path under operator op.
func has(ops bson.D, op, path string) bool {
	for _, o := range ops {
		if o.Key != op {
			continue
		}
		fields, _ := o.Value.(bson.D)
		return slices.ContainsFunc(fields, func(f bson.E) bool { return f.Key == path })
	}
	return false
}
