package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

const marker = "SECRET-7f3a9c"

// TestNoValueReachesATrace: a value given as a document field, in a
// filter, an update, a pipeline, an ID, quoted by the server in a
// duplicate key error, or by a listener in its error, appears in no span
// (name, attribute, event, status) and no metric attribute.
func TestNoValueReachesATrace(t *testing.T) {
	g := newRig(t, false)
	_, err := g.db.Collection("accounts").Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)})
	require.NoError(t, err)
	g.bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Type == events.AfterUpdate {
			return fmt.Errorf("cannot mail %s", marker)
		}
		return nil
	}))
	r := g.accounts
	errs := []error{
		r.Insert(ctx, &Account{Email: marker}),
		r.Insert(ctx, &Account{Email: marker}), // duplicate key: the server quotes it
	}
	_, err = r.FindOne(ctx, bson.M{"email": marker})
	errs = append(errs, err)
	_, err = r.FindByID(ctx, marker) // not an ObjectID: the error quotes it
	errs = append(errs, err)
	_, err = r.Find(ctx, bson.M{"$where": marker})
	errs = append(errs, err)
	_, err = r.UpdateOne(ctx, bson.M{"email": marker}, bson.M{"$set": bson.M{"email": marker + "2"}})
	errs = append(errs, err)
	_, err = r.Distinct(ctx, "email", bson.M{"email": bson.M{"$ne": marker}})
	errs = append(errs, err)
	var out []bson.M
	errs = append(errs, r.Aggregate(ctx, bson.A{bson.M{"$match": bson.M{"email": marker}}, bson.M{"$" + marker: 1}}, &out))
	_, err = r.Count(ctx, bson.M{"email": bson.M{"$" + marker: 1}})
	errs = append(errs, err)

	quoted := 0
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), marker) {
			quoted++
		}
	}
	require.GreaterOrEqual(t, quoted, 3, "the errors the caller gets do quote the value: %v", errors.Join(errs...))

	spans := g.take()
	require.GreaterOrEqual(t, len(spans), len(errs))
	for _, s := range spans {
		text := fmt.Sprintf("%s %v %v %v %v", s.Name, s.Attributes, s.Events, s.Status, s.Links)
		assert.NotContains(t, text, marker, "span %s", s.Name)
	}
	for name, m := range g.collect(t) {
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
			for _, dp := range h.DataPoints {
				assert.NotContains(t, fmt.Sprint(dp.Attributes.ToSlice()), marker, name)
			}
		}
	}
}
