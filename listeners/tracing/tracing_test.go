package tracing_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// histCount returns how many durations the histogram holds for method,
// with error.type errType ("" for none).
func histCount(t *testing.T, ms map[string]metricdata.Metrics, method, errType string) uint64 {
	t.Helper()
	m, ok := ms["db.client.operation.duration"]
	if !ok {
		return 0
	}
	assert.Equal(t, "s", m.Unit)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "a float64 histogram")
	var n uint64
	for _, dp := range h.DataPoints {
		op, _ := dp.Attributes.Value("db.operation.name")
		et, _ := dp.Attributes.Value("error.type")
		if op.AsString() == method && sameType(et.AsString(), errType) {
			n += dp.Count
			sys, _ := dp.Attributes.Value("db.system.name")
			assert.Equal(t, "mongodb", sys.AsString())
			_, has := dp.Attributes.Value("db.collection.name")
			assert.True(t, has)
			_, has = dp.Attributes.Value("mgmevents.model")
			assert.True(t, has)
		}
	}
	return n
}

// TestEveryMethodSpanAndMetric: each repository method, when it succeeds
// and when it fails, gets one INTERNAL span named after it and the
// collection, with the database conventions' attributes, the model, its
// counts, and on failure status Error, an exception event and error.type;
// and one db.client.operation.duration measurement with the same
// attributes (error.type on failures). A read that finds nothing is no
// failure.
func TestEveryMethodSpanAndMetric(t *testing.T) {
	g := newRig(t, false)
	r := g.accounts
	vetoed := context.WithValue(ctx, vetoKey{}, true)
	bad := bson.M{"$bad": 1} // the server refuses it
	missing := bson.M{"email": "nobody"}
	seed := &Account{Email: "a@x", Age: 1}
	require.NoError(t, r.Insert(ctx, seed))
	require.NoError(t, r.Insert(ctx, &Account{Email: "b@x", Age: 2}))
	require.NoError(t, r.Insert(ctx, &Account{Email: "c@x", Age: 3}))
	require.NoError(t, r.Insert(ctx, &Account{Email: "d@x", Age: 4}))
	g.take()
	cases := []struct {
		name    string
		method  string
		run     func() error
		errType string         // "" for success
		counts  map[string]any // the count attributes, exactly
	}{
		{"Insert", "Insert", func() error { return r.Insert(ctx, &Account{Email: "e@x"}) }, "", map[string]any{"mgmevents.inserted": int64(1)}},
		{"Insert duplicate", "Insert", func() error { return r.Insert(ctx, seed) }, "duplicate_key", map[string]any{"mgmevents.inserted": int64(0)}},
		{"Save", "Save", func() error { seed.Age = 5; return r.Save(ctx, seed) }, "",
			map[string]any{"mgmevents.matched": int64(1), "mgmevents.modified": int64(1), "mgmevents.upserted": int64(0)}},
		{"Save vetoed", "Save", func() error { return r.Save(vetoed, seed) }, "vetoed",
			map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(0)}},
		{"Update", "Update", func() error { seed.Age = 6; return r.Update(ctx, seed) }, "",
			map[string]any{"mgmevents.matched": int64(1), "mgmevents.modified": int64(1), "mgmevents.upserted": int64(0)}},
		{"Update missing", "Update", func() error {
			return r.Update(ctx, &Account{DefaultModel: seedModel(primitive.NewObjectID())})
		}, "not_found", map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(0)}},
		{"InsertMany", "InsertMany", func() error { return r.InsertMany(ctx, []*Account{{Email: "f@x"}, {Email: "g@x"}}) }, "",
			map[string]any{"mgmevents.inserted": int64(2)}},
		{"InsertMany part way", "InsertMany", func() error { return r.InsertMany(ctx, []*Account{{Email: "h@x"}, seed}) }, "duplicate_key",
			map[string]any{"mgmevents.inserted": int64(1)}},
		{"FindByID", "FindByID", func() error { _, err := r.FindByID(ctx, seed.ID); return err }, "", map[string]any{"db.response.returned_rows": int64(1)}},
		{"FindByID bad id", "FindByID", func() error { _, err := r.FindByID(ctx, "not hex"); return err }, "invalid_argument",
			map[string]any{"db.response.returned_rows": int64(0)}},
		{"FindOne", "FindOne", func() error { _, err := r.FindOne(ctx, bson.M{"email": "b@x"}); return err }, "", map[string]any{"db.response.returned_rows": int64(1)}},
		{"FindOne nothing", "FindOne", func() error { _, err := r.FindOne(ctx, missing); return err }, "", map[string]any{"db.response.returned_rows": int64(0)}},
		{"FindOne vetoed", "FindOne", func() error { _, err := r.FindOne(vetoed, bson.D{}); return err }, "vetoed", map[string]any{"db.response.returned_rows": int64(0)}},
		{"Find", "Find", func() error { _, err := r.Find(ctx, bson.M{"email": bson.M{"$in": bson.A{"b@x", "c@x"}}}); return err }, "",
			map[string]any{"db.response.returned_rows": int64(2)}},
		{"Find refused", "Find", func() error { _, err := r.Find(ctx, bad); return err }, "server_error", map[string]any{"db.response.returned_rows": int64(0)}},
		{"Iter", "Iter", func() error {
			c, err := r.Iter(ctx, bson.D{})
			if err == nil {
				_ = c.Close(ctx)
			}
			return err
		}, "", map[string]any{"db.response.returned_rows": int64(0)}},
		{"Iter vetoed", "Iter", func() error { _, err := r.Iter(vetoed, bson.D{}); return err }, "vetoed", map[string]any{"db.response.returned_rows": int64(0)}},
		{"All", "All", func() error {
			for _, err := range r.All(ctx, bson.M{"email": "b@x"}) {
				if err != nil {
					return err
				}
			}
			return nil
		}, "", map[string]any{"db.response.returned_rows": int64(1)}},
		{"All refused", "All", func() error {
			for _, err := range r.All(ctx, bad) {
				return err
			}
			return nil
		}, "server_error", map[string]any{"db.response.returned_rows": int64(0)}},
		{"FindPage", "FindPage", func() error {
			_, err := r.FindPage(ctx, bson.M{"email": bson.M{"$in": bson.A{"b@x", "c@x"}}}, repo.PageRequest{Size: 1, Count: true})
			return err
		}, "", map[string]any{"db.response.returned_rows": int64(1)}},
		{"FindPage refused", "FindPage", func() error { _, err := r.FindPage(ctx, bad, repo.PageRequest{Size: 1}); return err }, "server_error",
			map[string]any{"db.response.returned_rows": int64(0)}},
		{"FindAs", "FindAs", func() error { _, err := repo.FindAs[accountEmail](ctx, r, bson.M{"email": "b@x"}); return err }, "",
			map[string]any{"db.response.returned_rows": int64(1)}},
		{"FindAs refused", "FindAs", func() error { _, err := repo.FindAs[accountEmail](ctx, r, bad); return err }, "server_error",
			map[string]any{"db.response.returned_rows": int64(0)}},
		{"Count", "Count", func() error { _, err := r.Count(ctx, bson.D{}); return err }, "", map[string]any{}},
		{"Count refused", "Count", func() error { _, err := r.Count(ctx, bad); return err }, "server_error", map[string]any{}},
		{"Distinct", "Distinct", func() error { _, err := r.Distinct(ctx, "email", bson.M{"age": 2}); return err }, "",
			map[string]any{"db.response.returned_rows": int64(1)}},
		{"Distinct without field", "Distinct", func() error { _, err := r.Distinct(ctx, "", nil); return err }, "invalid_argument",
			map[string]any{"db.response.returned_rows": int64(0)}},
		{"Aggregate", "Aggregate", func() error {
			var out []bson.M
			return r.Aggregate(ctx, bson.A{bson.M{"$match": bson.M{"age": bson.M{"$gte": 2}}}}, &out)
		}, "", map[string]any{"db.response.returned_rows": int64(4)}},
		{"Aggregate refused", "Aggregate", func() error {
			var out []bson.M
			return r.Aggregate(ctx, bson.A{bson.M{"$bad": 1}}, &out)
		}, "server_error", map[string]any{"db.response.returned_rows": int64(0)}},
		{"UpdateOne upsert", "UpdateOne", func() error {
			_, err := r.UpdateOne(ctx, bson.M{"email": "u@x"}, bson.M{"$set": bson.M{"age": 9}}, options.Update().SetUpsert(true))
			return err
		}, "", map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(1)}},
		{"UpdateOne without filter", "UpdateOne", func() error { _, err := r.UpdateOne(ctx, nil, bson.M{"$set": bson.M{"age": 9}}); return err },
			"invalid_argument", map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(0)}},
		{"UpdateMany", "UpdateMany", func() error {
			_, err := r.UpdateMany(ctx, bson.M{"email": bson.M{"$in": bson.A{"f@x", "g@x"}}}, bson.M{"$inc": bson.M{"age": 1}})
			return err
		}, "", map[string]any{"mgmevents.matched": int64(2), "mgmevents.modified": int64(2), "mgmevents.upserted": int64(0)}},
		{"UpdateMany refused", "UpdateMany", func() error { _, err := r.UpdateMany(ctx, bad, bson.M{"$inc": bson.M{"age": 1}}); return err },
			"server_error", map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(0)}},
		{"FindOneAndUpdate", "FindOneAndUpdate", func() error {
			_, err := r.FindOneAndUpdate(ctx, bson.M{"email": "b@x"}, bson.M{"$set": bson.M{"age": 7}})
			return err
		}, "", map[string]any{"mgmevents.matched": int64(1), "mgmevents.modified": int64(1), "mgmevents.upserted": int64(0), "db.response.returned_rows": int64(1)}},
		{"FindOneAndUpdate vetoed", "FindOneAndUpdate", func() error {
			_, err := r.FindOneAndUpdate(vetoed, bson.M{"email": "b@x"}, bson.M{"$set": bson.M{"age": 7}})
			return err
		}, "vetoed", map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(0), "db.response.returned_rows": int64(0)}},
		{"Delete", "Delete", func() error {
			m, err := r.FindOne(ctx, bson.M{"email": "c@x"})
			require.NoError(t, err)
			g.take()
			return r.Delete(ctx, m)
		}, "", map[string]any{"mgmevents.deleted": int64(1)}},
		{"Delete vetoed", "Delete", func() error { return r.Delete(vetoed, seed) }, "vetoed", map[string]any{"mgmevents.deleted": int64(0)}},
		{"DeleteMany", "DeleteMany", func() error {
			_, err := r.DeleteMany(ctx, bson.M{"email": bson.M{"$in": bson.A{"f@x", "g@x"}}})
			return err
		}, "", map[string]any{"mgmevents.deleted": int64(2)}},
		{"DeleteMany refused", "DeleteMany", func() error { _, err := r.DeleteMany(ctx, bad); return err }, "server_error",
			map[string]any{"mgmevents.deleted": int64(0)}},
		{"FindOneAndDelete", "FindOneAndDelete", func() error { _, err := r.FindOneAndDelete(ctx, bson.M{"email": "d@x"}); return err }, "",
			map[string]any{"mgmevents.deleted": int64(1), "db.response.returned_rows": int64(1)}},
		{"FindOneAndDelete nothing", "FindOneAndDelete", func() error { _, err := r.FindOneAndDelete(ctx, missing); return err }, "",
			map[string]any{"mgmevents.deleted": int64(0), "db.response.returned_rows": int64(0)}},
		{"FindOneAndDelete refused", "FindOneAndDelete", func() error { _, err := r.FindOneAndDelete(ctx, bad); return err }, "server_error",
			map[string]any{"mgmevents.deleted": int64(0), "db.response.returned_rows": int64(0)}},
		{"DeleteOne", "DeleteOne", func() error { _, err := r.DeleteOne(ctx, bson.M{"email": "e@x"}); return err }, "",
			map[string]any{"mgmevents.deleted": int64(1)}},
		{"DeleteOne without filter", "DeleteOne", func() error { _, err := r.DeleteOne(ctx, nil); return err }, "invalid_argument",
			map[string]any{"mgmevents.deleted": int64(0)}},
		{"ReplaceOne", "ReplaceOne", func() error {
			_, err := r.ReplaceOne(ctx, bson.M{"email": "b@x"}, &Account{Email: "b@x", Age: 8})
			return err
		}, "",
			map[string]any{"mgmevents.matched": int64(1), "mgmevents.modified": int64(1), "mgmevents.upserted": int64(0)}},
		{"ReplaceOne vetoed", "ReplaceOne", func() error {
			_, err := r.ReplaceOne(vetoed, bson.M{"email": "b@x"}, &Account{Email: "b@x"})
			return err
		},
			"vetoed", map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(0)}},
		{"FindOneAndReplace", "FindOneAndReplace", func() error {
			_, err := r.FindOneAndReplace(ctx, bson.M{"email": "b@x"}, &Account{Email: "b@x", Age: 9})
			return err
		}, "", map[string]any{"mgmevents.matched": int64(1), "mgmevents.modified": int64(1), "mgmevents.upserted": int64(0), "db.response.returned_rows": int64(1)}},
		{"FindOneAndReplace refused", "FindOneAndReplace", func() error { _, err := r.FindOneAndReplace(ctx, bad, &Account{Email: "z@x"}); return err },
			"server_error", map[string]any{"mgmevents.matched": int64(0), "mgmevents.modified": int64(0), "mgmevents.upserted": int64(0), "db.response.returned_rows": int64(0)}},
		{"BulkWrite", "BulkWrite", func() error {
			_, err := r.BulkWrite(ctx, []mongo.WriteModel{
				mongo.NewInsertOneModel().SetDocument(&Account{Email: "i@x"}),
				mongo.NewUpdateOneModel().SetFilter(bson.M{"email": "i@x"}).SetUpdate(bson.M{"$set": bson.M{"age": 3}}),
				mongo.NewDeleteOneModel().SetFilter(bson.M{"email": "i@x"}),
			})
			return err
		}, "", map[string]any{"mgmevents.inserted": int64(1), "mgmevents.matched": int64(1), "mgmevents.modified": int64(1),
			"mgmevents.upserted": int64(0), "mgmevents.deleted": int64(1)}},
		{"BulkWrite without models", "BulkWrite", func() error { _, err := r.BulkWrite(ctx, nil); return err }, "invalid_argument",
			map[string]any{"mgmevents.inserted": int64(0), "mgmevents.matched": int64(0), "mgmevents.modified": int64(0),
				"mgmevents.upserted": int64(0), "mgmevents.deleted": int64(0)}},
		{"Watch vetoed", "Watch", func() error { _, err := r.Watch(vetoed, mongo.Pipeline{}); return err }, "vetoed", map[string]any{}},
	}
	if info := srv.Info(); info.FerretDB != "" || !(info.ReplicaSet || info.Sharded) {
		// The embedded server has no change streams: it refuses Watch.
		cases = append(cases, struct {
			name    string
			method  string
			run     func() error
			errType string
			counts  map[string]any
		}{"Watch refused", "Watch", func() error { _, err := r.Watch(ctx, mongo.Pipeline{}); return err }, "server_error", map[string]any{}})
	} else {
		cases = append(cases, struct {
			name    string
			method  string
			run     func() error
			errType string
			counts  map[string]any
		}{"Watch", "Watch", func() error {
			cs, err := r.Watch(ctx, mongo.Pipeline{})
			if err == nil {
				_ = cs.Close(ctx)
			}
			return err
		}, "", map[string]any{}})
	}
	succeeds, fails := map[string]bool{}, map[string]bool{}
	for _, c := range cases {
		if c.errType == "" {
			succeeds[c.method] = true
		} else {
			fails[c.method] = true
		}
	}
	rt := reflect.TypeOf(r)
	for i := range rt.NumMethod() {
		m := rt.Method(i)
		if m.Type.NumIn() > 1 && m.Type.In(1) == reflect.TypeFor[context.Context]() {
			assert.True(t, fails[m.Name], "%s takes a context but has no failing case here", m.Name)
			assert.True(t, succeeds[m.Name] || m.Name == "Watch", "%s takes a context but has no succeeding case here", m.Name) // Watch succeeds only where the server has change streams
		}
	}
	for _, c := range cases {
		before := histCount(t, g.collect(t), c.method, c.errType)
		err := c.run()
		spans := named(g.take(), c.method+" accounts")
		require.Len(t, spans, 1, c.name)
		s := spans[0]
		assert.Equal(t, trace.SpanKindInternal, s.SpanKind, c.name)
		a := attrs(s.Attributes)
		assert.Equal(t, "mongodb", a["db.system.name"], c.name)
		assert.Equal(t, g.db.Name(), a["db.namespace"], c.name)
		assert.Equal(t, "accounts", a["db.collection.name"], c.name)
		assert.Equal(t, c.method, a["db.operation.name"], c.name)
		assert.Equal(t, "*tracing_test.Account", a["mgmevents.model"], c.name)
		for _, k := range []string{"mgmevents.inserted", "mgmevents.matched", "mgmevents.modified", "mgmevents.upserted", "mgmevents.deleted", "db.response.returned_rows"} {
			assert.Equal(t, c.counts[k], a[k], "%s: %s", c.name, k)
		}
		assert.Equal(t, before+1, histCount(t, g.collect(t), c.method, c.errType), "%s: one measurement", c.name)
		if c.errType == "" {
			assert.Equal(t, codes.Unset, s.Status.Code, c.name)
			assert.Nil(t, a["error.type"], c.name)
			assert.Empty(t, exceptions(s), c.name)
			continue
		}
		require.Error(t, err, c.name)
		assert.Equal(t, codes.Error, s.Status.Code, c.name)
		assert.True(t, sameType(a["error.type"].(string), c.errType), "%s: error.type %v", c.name, a["error.type"])
		ex := exceptions(s)
		require.Len(t, ex, 1, c.name)
		ea := attrs(ex[0].Attributes)
		assert.Equal(t, a["error.type"], ea["exception.type"], c.name)
		assert.Equal(t, s.Status.Description, ea["exception.message"], c.name)
		if c.errType == "vetoed" {
			assert.Equal(t, "github.com/mgmevents/mgmevents/listeners/tracing_test.veto", a["mgmevents.listener"], c.name)
			assert.Contains(t, s.Status.Description, "listener github.com/mgmevents/mgmevents/listeners/tracing_test.veto aborted", c.name)
		}
	}
}

// TestSpanTimesTheOperation: the span covers the whole operation, and the
// measurement is its duration, but for the moments it takes to start and
// end the span (the SDK reads its own clock).
func TestSpanTimesTheOperation(t *testing.T) {
	g := newRig(t, false)
	require.NoError(t, g.accounts.Insert(ctx, &Account{Email: "a@x"}))
	s := named(g.take(), "Insert accounts")
	require.Len(t, s, 1)
	d := s[0].EndTime.Sub(s[0].StartTime)
	assert.Positive(t, d)
	h := g.collect(t)["db.client.operation.duration"].Data.(metricdata.Histogram[float64])
	require.Len(t, h.DataPoints, 1)
	assert.Positive(t, h.DataPoints[0].Sum)
	assert.InDelta(t, d.Seconds(), h.DataPoints[0].Sum, 2e-3)
}

// exceptions returns the exception events of s, without the events of its
// listener calls.
func exceptions(s tracetest.SpanStub) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events {
		if e.Name == "exception" {
			out = append(out, e)
		}
	}
	return out
}

// sameType reports whether error.type got is want, or for want
// "server_error" any server code (they differ between servers).
func sameType(got, want string) bool {
	if want == "server_error" {
		return strings.HasPrefix(got, "server_error_")
	}
	return got == want
}

// accountEmail is a DTO of Account.
type accountEmail struct {
	Email string `bson:"email"`
}
