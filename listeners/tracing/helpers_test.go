package tracing_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/tracing"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.opentelemetry.io/contrib/instrumentation/go.mongodb.org/mongo-driver/mongo/otelmongo"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

var ctx = context.Background()

// Account has an auto key, so that AutoKeys runs (and makes its own
// database calls) inside every insert.
type Account struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64  `bson:"no" auto:"inc"`
	Email            string `bson:"email"`
	Age              int    `bson:"age"`
}

type vetoKey struct{}

var errVeto = errors.New("vetoed for the test")

// veto vetoes every Before* event under a context with vetoKey.
func veto(ctx context.Context, e *events.Event) error {
	if e.Type.Before() && ctx.Value(vetoKey{}) != nil {
		return errVeto
	}
	return nil
}

// rig is a repository of Accounts traced by a recording SDK: spans go to
// spans as they end, metrics to reader when collected.
type rig struct {
	spans    *tracetest.InMemoryExporter
	reader   *sdkmetric.ManualReader
	db       *mongo.Database
	keys     *autokeys.Keys
	accounts *repo.Repository[*Account]
	bus      *events.Bus
}

// newRig builds the rig; with driverSpans, otelmongo traces the client's
// commands with the same provider.
func newRig(t testing.TB, driverSpans bool, opts ...tracing.Option) *rig {
	t.Helper()
	g := &rig{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(g.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(g.reader))
	t.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	var copts []*options.ClientOptions
	if driverSpans {
		copts = append(copts, options.Client().SetMonitor(otelmongo.NewMonitor(otelmongo.WithTracerProvider(tp))))
	}
	g.db = srv.Database(t, copts...)
	var err error
	g.keys, err = autokeys.New(g.db, autokeys.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.keys.Close(ctx) })
	g.bus = events.NewBus()
	g.bus.Register(g.keys)
	g.bus.Register(events.ListenerFunc(veto))
	g.bus.Register(tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp)}, opts...)...))
	g.accounts, err = repo.New[*Account](g.bus, repo.WithDatabase(g.db))
	require.NoError(t, err)
	return g
}

// take returns the spans ended since the last call.
func (g *rig) take() tracetest.SpanStubs {
	s := g.spans.GetSpans()
	g.spans.Reset()
	return s
}

// named returns the spans of ss named name.
func named(ss tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range ss {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// attrs returns a span's attributes as a map.
func attrs(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// collect returns the metrics read now.
func (g *rig) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	return collect(t, g.reader)
}

// collect returns the metrics reader has, by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// seedModel returns a model base with the given ID.
func seedModel(id primitive.ObjectID) mgm.DefaultModel {
	return mgm.DefaultModel{IDField: mgm.IDField{ID: id}}
}
