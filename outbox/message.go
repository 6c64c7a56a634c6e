// Package outbox stores domain events in the same single-document write as
// the change that caused them, and delivers them at least once, in order
// per document, through relays that share the work by leases.
package outbox

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/bson"
)

// Message is one domain event as a relay delivers it.
type Message struct {
	ID      string    // unique per event (UUIDv7); consumers de-duplicate on it
	Type    string    // as recorded
	Source  string    // the collection
	Subject string    // the document's _id as a string: hex for an ObjectID, the string itself, or relaxed extended JSON
	Tenant  string    // the model's tenant, when it has a tenant field
	Seq     int64     // 1, 2, 3, … per document _id, in the order recorded, continued by a document inserted again under the _id of a removed one (see Seqs)
	Time    time.Time // when it was recorded
	Data    bson.Raw  // the recorded data, encoded with the repository's registry
	Attempt int       // 1 on the first delivery
}

// Publisher delivers messages to a broker. Publish must return only once the
// broker has the message; an error makes the relay retry it later, unless
// it matches ErrUndeliverable or ErrDataNotJSON, which no attempt can
// overcome: then the message moves to DeadLetters at once. Its
// context ends when the relay's lease on the document would no longer
// cover the removal of what it published; the relay stops waiting then,
// counts a failed attempt and goes on with other documents, so a Publish
// should give up when its context ends; while MaxHungPublishes of the
// relay's publishes, abandoned ones included, have not returned, it starts
// no more (ErrPublishHung).
type Publisher interface {
	Publish(ctx context.Context, m Message) error
}

// ErrUndeliverable is what a Publisher's error wraps, for errors.Is, when
// no attempt can deliver the message (the broker refuses it for what it
// holds, not for the broker's state): the relay moves it to DeadLetters
// at its first failure instead of retrying it WithMaxAttempts times.
var ErrUndeliverable = errors.New("outbox: the message cannot be delivered")

// PublisherFunc adapts a function to a Publisher, as http.HandlerFunc does.
type PublisherFunc func(ctx context.Context, m Message) error

// Publish calls f(ctx, m).
func (f PublisherFunc) Publish(ctx context.Context, m Message) error { return f(ctx, m) }
