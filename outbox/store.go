package outbox

import (
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// Field is the reserved field of a document that holds its undelivered
// events. The application never writes it: the outbox refuses a model or
// an update that does. Its parts:
//
//	q     the IDs of the undelivered events, in the order recorded
//	e     the events by ID: t (type), at (time recorded), d (data)
//	n     how many events the document has ever recorded, so that q[i]
//	      has Seq s+n-len(q)+1+i
//	s     the last Seq of the documents with its _id that relays removed
//	      before it was inserted (see Seqs); a relay writes it with its
//	      first removal, and reads it from Seqs until then
//	b     the bytes of the undelivered events
//	due   while there is work for a relay: when it should look next
//	gone  the application deleted the document; a relay removes it once
//	      its events are delivered, and no read sees it meanwhile
//	tf    the model's tenant field, which the relay reads Message.Tenant from
//	a     delivery attempts that failed, by event ID: n (count), err (last)
//	hold  after a failed delivery, until when the document waits (its
//	      backoff); only relays write it, so a writer's due time, which
//	      only ever moves earlier, does not cut the backoff short
//
// Writers append to q with $push and relays remove from its head with
// $pull, so the server orders the events of concurrent writers and no
// write needs to read the document first.
const Field = "_outbox"

// The parts of Field.
const (
	partQueue  = "q"
	partEvents = "e"
	partCount  = "n"
	partBytes  = "b"
	partDue    = "due"
	partGone   = "gone"
	partTenant = "tf"
	partTries  = "a"
	partHold   = "hold"
	partBase   = "s"
)

func path(parts ...string) string {
	p := Field
	for _, s := range parts {
		p += "." + s
	}
	return p
}

// storedEvent is an event as a document holds it under e.
type storedEvent struct {
	Type string             `bson:"t"`
	At   primitive.DateTime `bson:"at"`
	Data bson.Raw           `bson:"d,omitempty"`
}

// date is t as a BSON date. The outbox writes its own times as such, never
// as time.Time, so that a repository's or relay's registry that encodes
// time.Time otherwise (as a string, say) cannot change what the relay's
// queries compare.
func date(t time.Time) primitive.DateTime { return primitive.NewDateTimeFromTime(t) }

// batch is the events one write stores, encoded.
type batch struct {
	ids    bson.A // of string
	bodies bson.D // ID: storedEvent
	bytes  int64
}

// encode encodes evs with the repository's registry.
func encode(reg *bsoncodec.Registry, evs []Recorded) (batch, error) {
	b := batch{ids: make(bson.A, len(evs)), bodies: make(bson.D, len(evs))}
	for i, ev := range evs {
		if _, err := uuid.Parse(ev.ID); err != nil || ev.ID == uuid.Nil.String() {
			return batch{}, fmt.Errorf("event %d (%q) has no valid ID %q; record events with Recorder.Record", i, ev.Type, ev.ID)
		}
		if ev.Type == "" {
			return batch{}, fmt.Errorf("event %d (ID %s) has an empty type", i, ev.ID)
		}
		body := storedEvent{Type: ev.Type, At: date(ev.Time)}
		if ev.Data != nil {
			raw, err := bsonio.Marshal(reg, ev.Data)
			if err != nil {
				return batch{}, fmt.Errorf("event %q: data of type %T does not encode to a BSON document: %w", ev.Type, ev.Data, err)
			}
			body.Data = raw
		}
		b.ids[i] = ev.ID
		b.bodies[i] = bson.E{Key: ev.ID, Value: body}
		b.bytes += int64(len(body.Data) + len(ev.Type) + len(ev.ID))
	}
	return b, nil
}

// fits checks the batch of e's write against the limits on its own,
// before any stored event counts; only a refusal formats e.
func (o *Outbox) fits(b batch, e *events.Event) error {
	if len(b.ids) > o.maxEvents || b.bytes > o.maxBytes {
		return fmt.Errorf("%w: %v %v %v records %d events of %d bytes, more than one document holds (at most %d events, %d bytes)",
			ErrFull, e.Op, e.ModelType, idOf(e), len(b.ids), b.bytes, o.maxEvents, o.maxBytes)
	}
	return nil
}

// field is Field's value in a new document holding b.
func (b batch) field(now time.Time, tenantField string) bson.D {
	d := bson.D{
		{Key: partQueue, Value: b.ids},
		{Key: partEvents, Value: b.bodies},
		{Key: partCount, Value: int64(len(b.ids))},
		{Key: partBytes, Value: b.bytes},
		{Key: partDue, Value: date(now)},
	}
	if tenantField != "" {
		d = append(d, bson.E{Key: partTenant, Value: tenantField})
	}
	return d
}

// guards are the conditions under which a stored document takes b: room
// in the queue and in the bytes.
func (o *Outbox) guards(b batch) []bson.E {
	return []bson.E{
		{Key: path(partQueue, strconv.Itoa(o.maxEvents-len(b.ids))), Value: bson.D{{Key: "$exists", Value: false}}},
		{Key: path(partBytes), Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$gt", Value: o.maxBytes - b.bytes}}}}},
	}
}

// ownRegistry is the driver's default registry, which encodes the
// outbox's own field whatever the repository's registry does.
var ownRegistry = bson.NewRegistry()

// appendField returns doc with name: value added at its end, value
// encoded with the default registry: it is the outbox's own field.
func appendField(doc bson.Raw, name string, value any) (bson.Raw, error) {
	el, err := bsonio.Marshal(ownRegistry, bson.D{{Key: name, Value: value}})
	if err != nil {
		return nil, err
	}
	if len(doc) < 5 {
		return nil, fmt.Errorf("a document of %d bytes", len(doc))
	}
	body := el[4 : len(el)-1]
	out := make(bson.Raw, 0, len(doc)+len(body))
	out = append(out, 0, 0, 0, 0)
	out = append(out, doc[4:len(doc)-1]...)
	out = append(out, body...)
	out = append(out, 0)
	n := len(out)
	out[0], out[1], out[2], out[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return out, nil
}

// tries counts the failed deliveries of one event.
type tries struct {
	N   int    `bson:"n"`
	Err string `bson:"err,omitempty"`
}

// box is Field as a relay reads it.
type box struct {
	Queue  []string               `bson:"q"`
	Events map[string]storedEvent `bson:"e"`
	Count  int64                  `bson:"n"`
	Bytes  int64                  `bson:"b"`
	Due    time.Time              `bson:"due"`
	Gone   bool                   `bson:"gone"`
	Tenant string                 `bson:"tf"`
	Tries  map[string]tries       `bson:"a"`
	Base   *int64                 `bson:"s"`
}
