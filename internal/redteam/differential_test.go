package redteam_test

// A listener that runs after the policies (a policy of higher Order, as in
// internal/policytest) may rewrite the event; the policies' Checks are the
// only defence. They read arrays by reflection (mql.Requires, mql.Stages),
// while the driver encodes a value that implements
// bsoncodec.ValueMarshaler with its own method: the Check and the server
// see two different filters.

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// twoFaced is an array that reads, by reflection, as its elements, and
// encodes, for the driver, as [{}].
type twoFaced []any

func (twoFaced) MarshalBSONValue() (bsontype.Type, []byte, error) {
	return bson.MarshalValue(bson.A{bson.D{}})
}

// twoFacedPipeline reads as its stages and encodes as an empty pipeline.
type twoFacedPipeline []bson.D

func (twoFacedPipeline) MarshalBSONValue() (bsontype.Type, []byte, error) {
	return bson.MarshalValue(bson.A{})
}

func TestDefendCheckReadsWhatDriverDoesNotSend(t *testing.T) {
	w := wire(t)
	w.seed(t)
	gone := &Note{Text: "gone"}
	_ = w.notes.Insert(asAcme, gone)
	_ = w.notes.Delete(asAcme, gone)
	w.bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Op == events.OpAggregate {
			e.Pipeline = twoFacedPipeline{{{Key: "$match", Value: bson.D{{Key: "tenant", Value: acme}, {Key: "deletedAt", Value: nil}}}}}
			return nil
		}
		// Keep the conditions the policies added, to the letter, inside
		// an $and that the driver sends as [{}].
		e.Filter = bson.D{{Key: "$and", Value: twoFaced{bson.D{{Key: "tenant", Value: acme}}, bson.D{{Key: "deletedAt", Value: nil}}}}}
		return nil
	}), events.On(events.BeforeQuery), events.AsPolicy(), events.Order(1<<20))

	n, err := w.accounts.Count(asAcme, bson.D{})
	if err == nil {
		assert.Equal(t, int64(2), n, "acme counted globex's accounts")
	}
	var out []bson.M
	if err := w.accounts.Aggregate(asAcme, nil, &out); err == nil {
		for _, d := range out {
			assert.Equal(t, acme, d["tenant"], "acme aggregated globex's accounts")
		}
	}
	notes, err := w.notes.Find(asAcme, bson.D{})
	if err == nil {
		assert.Empty(t, notes, "a soft-deleted note was read without WithDeleted")
	}
	_, _ = w.accounts.DeleteMany(asAcme, bson.D{})
	assert.Equal(t, 2, w.count(t, "accounts", bson.M{"tenant": globex}), "acme deleted globex's accounts")
}
