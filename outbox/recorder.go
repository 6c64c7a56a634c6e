package outbox

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Recorder holds a model's domain events until a repository stores them
// in the model's document, in the same write as the change. Embed it in
// the model with bson:"-" (it is not a field of the document), and
// register New on the bus:
//
//	type Order struct {
//		mgm.DefaultModel `bson:",inline"`
//		outbox.Recorder  `bson:"-"`
//		Status           string `bson:"status"`
//	}
//
//	func (o *Order) Place() { o.Status = "placed"; o.Record("order.placed", OrderPlaced{ID: o.ID}) }
//
// Insert, InsertMany, Save, Update and Delete store what is recorded; once
// the write succeeds the recorder is empty, and when it fails or a listener
// vetoes it the events stay recorded. A Recorder is not safe for
// concurrent use, as the model that embeds it is not.
type Recorder struct {
	events  []Recorded
	sending int // how many of events the write in progress carries
}

// Recorded is one domain event as recorded, not yet stored.
type Recorded struct {
	ID   string    // a UUIDv7, the Message.ID it is delivered with
	Type string    // as given to Record
	Time time.Time // when it was recorded, in UTC, to the millisecond: the one its ID holds
	Data any       // as given to Record; stored as a BSON document
}

// Record records an event of type typ (such as "order.placed") with data,
// a value that encodes to a BSON document (a struct, a map, bson.D) or
// nil. It is stored by the model's next write; data that does not encode
// makes that write fail with an error that names typ.
func (r *Recorder) Record(typ string, data any) {
	at := time.Now().UTC().Truncate(time.Millisecond)
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.Nil // refused when stored
	} else {
		at = time.Unix(id.Time().UnixTime()).UTC() // the millisecond the ID holds, which the relay counts from
	}
	r.events = append(r.events, Recorded{ID: id.String(), Type: typ, Time: at, Data: data})
}

// Recorded returns the events recorded and not yet stored, in order.
func (r *Recorder) Recorded() []Recorded { return slices.Clone(r.events) }

func (r *Recorder) outboxRecorder() *Recorder { return r }

// NeedsPolicies tells repositories (model.NeedsPolicy) that a model
// embedding a Recorder needs the outbox: repo.New refuses it on a bus
// without New, where its events would be stored nowhere.
func (*Recorder) NeedsPolicies() []string { return []string{PolicyTag} }

// holder is implemented by models that embed a Recorder.
type holder interface{ outboxRecorder() *Recorder }

// stored empties the recorder of the events the write carried.
func (r *Recorder) stored() {
	r.events = slices.Delete(r.events, 0, min(r.sending, len(r.events)))
	r.sending = 0
}

type recorderKey struct{}

// WithRecorder returns a context whose operator updates and deletes of one
// document (UpdateOne, FindOneAndUpdate, upserts included, Delete,
// FindOneAndDelete) store the events recorded on r, in the same write:
//
//	var r outbox.Recorder
//	r.Record("order.shipped", Shipped{ID: id})
//	_, err := orders.UpdateOne(outbox.WithRecorder(ctx, &r), bson.D{{Key: "_id", Value: id}}, ship)
//
// As with a model, r is empty once the write has stored them. Operations
// of many documents (UpdateMany, DeleteMany) refuse a context whose
// recorder holds events, since one event cannot belong to many documents.
// On a write by model the context's events follow the model's.
func WithRecorder(ctx context.Context, r *Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

func recorderFrom(ctx context.Context) *Recorder {
	r, _ := ctx.Value(recorderKey{}).(*Recorder)
	return r
}
