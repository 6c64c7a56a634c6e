package outbox

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// bury moves m to DeadLetters with its last error. Its _id is the
// message's ID, so burying it twice stores it once.
func (r *Relay) bury(ctx context.Context, m Message, cause error) error {
	_, err := r.db.Collection(DeadLetters).InsertOne(ctx, deadLetter{ID: m.ID, Type: m.Type, Source: m.Source, Subject: m.Subject, Tenant: m.Tenant,
		Seq: m.Seq, Time: m.Time, Data: m.Data, Attempts: m.Attempt, Error: cause.Error(), At: r.now()})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("moving message %s to %s: %w", m.ID, DeadLetters, err)
	}
	r.dead.Add(1)
	r.cfg.logger.WarnContext(ctx, "outbox: message moved to dead letters after its last attempt",
		"collection", DeadLetters, "id", m.ID, "type", m.Type, "source", m.Source, "subject", m.Subject, "seq", m.Seq, "attempts", m.Attempt, "error", cause)
	r.countDead(ctx, true)
	return nil
}

// deadLetter is a message in DeadLetters.
type deadLetter struct {
	ID       string    `bson:"_id"`
	Type     string    `bson:"type"`
	Source   string    `bson:"source"`
	Subject  string    `bson:"subject"`
	Tenant   string    `bson:"tenant,omitempty"`
	Seq      int64     `bson:"seq"`
	Time     time.Time `bson:"time"`
	Data     bson.Raw  `bson:"data,omitempty"`
	Attempts int       `bson:"attempts"`
	Error    string    `bson:"error"`
	At       time.Time `bson:"at"`
}
