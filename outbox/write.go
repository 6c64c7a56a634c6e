package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func (o *Outbox) beforeSave(ctx context.Context, e *events.Event, k kind, rec *Recorder) error {
	if e.Document != nil {
		if _, err := e.Document.LookupErr(Field); err == nil {
			return fmt.Errorf("%w: the %v document holds the reserved field %s (an inline map?); the outbox alone writes it", ErrUnsupported, e.ModelType, Field)
		}
	}
	if e.Op.Replace() {
		e.Keep(Field)
	}
	evs := take(modelRecorder(e), rec)
	if len(evs) == 0 {
		return nil
	}
	b, err := o.batch(ctx, e, evs)
	if err != nil {
		return err
	}
	switch e.Op {
	case events.OpInsert, events.OpInsertMany:
		if e.Document == nil {
			return fmt.Errorf("outbox: %v: no document to store the events in", e.ModelType)
		}
		e.Document, err = appendField(e.Document, Field, b.field(o.now(), k.tenantField))
		return err
	}
	o.add(e, b, k, true)
	return nil
}

// batch encodes the events e's write stores, checks them against the
// limits on their own, and names e's collection in Sources.
func (o *Outbox) batch(ctx context.Context, e *events.Event, evs []Recorded) (batch, error) {
	b, err := encode(e.Registry, evs)
	if err != nil {
		return batch{}, fmt.Errorf("outbox: %v: %w", e.ModelType, err)
	}
	if err := o.fits(b, e); err != nil {
		return batch{}, err
	}
	return b, o.register(ctx, e)
}

// add adds b to e's write as update operators, guarded by the limits
// when guard is set.
func (o *Outbox) add(e *events.Event, b batch, k kind, guard bool) {
	e.AddExtra("$push", path(partQueue), bson.D{{Key: "$each", Value: b.ids}})
	for _, body := range b.bodies {
		e.AddExtra("$set", path(partEvents, body.Key), body.Value)
	}
	if k.tenantField != "" {
		e.AddExtra("$set", path(partTenant), k.tenantField)
	}
	e.AddExtra("$inc", path(partCount), int64(len(b.ids)))
	e.AddExtra("$inc", path(partBytes), b.bytes)
	e.AddExtra("$min", path(partDue), date(o.now()))
	if !guard {
		return
	}
	full := fmt.Errorf("%w: the %s document %v cannot take %d more events of %d bytes (at most %d events, %d bytes undelivered)",
		ErrFull, e.Collection, idOf(e), len(b.ids), b.bytes, o.maxEvents, o.maxBytes)
	for _, c := range o.guards(b) {
		e.AddGuard(c, full)
	}
}

func (o *Outbox) beforeUpdate(ctx context.Context, e *events.Event, k kind, rec *Recorder) error {
	u, err := mql.ParseUpdate(e.Update)
	if err != nil {
		return err
	}
	if u.Touches(Field) {
		return fmt.Errorf("%w: the update writes the reserved field %s of %v", ErrUnsupported, Field, e.ModelType)
	}
	evs := take(rec)
	if len(evs) == 0 {
		return nil
	}
	if e.Op == events.OpUpdateMany {
		return fmt.Errorf("%w: UpdateMany with events recorded in the context: one event cannot belong to many documents", ErrUnsupported)
	}
	b, err := o.batch(ctx, e, evs)
	if err != nil {
		return err
	}
	guard := !e.Upsert || pinsID(e.Filter)
	if !guard {
		// An upsert by another key: a guarded miss would insert a second
		// document, so the stored events are counted just before.
		if err := o.room(ctx, e, b); err != nil {
			return err
		}
	}
	o.add(e, b, k, guard)
	return nil
}

// pinsID reports whether filter has an equality on _id.
func pinsID(filter any) bool {
	eqs, err := mql.Equalities(filter)
	return err == nil && slices.ContainsFunc(eqs, func(c bson.E) bool { return c.Key == "_id" })
}

// room checks, by a read, that the document e's write lands on can take
// b: the first that its filter matches in its sort, with its collation.
func (o *Outbox) room(ctx context.Context, e *events.Event, b batch) error {
	var doc struct {
		Box struct {
			Queue []string `bson:"q"`
			Bytes int64    `bson:"b"`
		} `bson:"_outbox"`
	}
	opts := options.FindOne().SetProjection(bson.D{{Key: path(partQueue), Value: 1}, {Key: path(partBytes), Value: 1}})
	if e.Sort != nil {
		opts.SetSort(e.Sort)
	}
	if e.Collation != nil {
		opts.SetCollation(e.Collation)
	}
	err := e.Coll.FindOne(ctx, e.Filter, opts).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("outbox: reading the undelivered events: %w", err)
	}
	if len(doc.Box.Queue)+len(b.ids) > o.maxEvents || doc.Box.Bytes+b.bytes > o.maxBytes {
		return fmt.Errorf("%w: the %s document holds %d events of %d bytes and cannot take %d more of %d bytes (at most %d events, %d bytes)",
			ErrFull, e.Collection, len(doc.Box.Queue), doc.Box.Bytes, len(b.ids), b.bytes, o.maxEvents, o.maxBytes)
	}
	return nil
}

func (o *Outbox) beforeDelete(ctx context.Context, e *events.Event, k kind, rec *Recorder) error {
	many := e.Op == events.OpDeleteMany
	evs := take(modelRecorder(e), rec)
	if many && len(evs) > 0 {
		return fmt.Errorf("%w: DeleteMany with events recorded in the context: one event cannot belong to many documents", ErrUnsupported)
	}
	if err := o.register(ctx, e); err != nil {
		return err
	}
	// Kept as a tombstone unless a soft delete keeps it anyway; a relay
	// looks at it either way, to deliver its events and to remove the
	// tombstone.
	e.AddTombstone("$set", path(partGone), true)
	if len(evs) == 0 {
		e.AddExtra("$min", path(partDue), date(o.now()))
		return nil
	}
	b, err := o.batch(ctx, e, evs)
	if err != nil {
		return err
	}
	o.add(e, b, k, true)
	return nil
}

// idOf names the document of e, for errors.
func idOf(e *events.Event) any {
	if m, ok := e.Model.(interface{ GetID() any }); ok {
		return m.GetID()
	}
	return "(by filter)"
}
