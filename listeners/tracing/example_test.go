package tracing_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/mgmevents/mgmevents/listeners/tracing"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.opentelemetry.io/contrib/instrumentation/go.mongodb.org/mongo-driver/mongo/otelmongo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type Member struct {
	mgm.DefaultModel `bson:",inline"`
	No               int64  `bson:"no" auto:"inc"`
	Name             string `bson:"name"`
}

// One Insert's trace: the repository's span, an event for AutoKeys' call
// (with its duration), and the driver's insert command under it (otelmongo
// on the same client).
func Example() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)

	srv, err := mongotest.NewServer(ctx)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := srv.Client(ctx, options.Client().SetMonitor(otelmongo.NewMonitor(otelmongo.WithTracerProvider(tp))))
	if err != nil {
		panic(err)
	}
	defer client.Disconnect(ctx)
	db := client.Database(mongotest.UniqueName("example"))
	defer db.Drop(ctx)

	keys, err := autokeys.New(db)
	if err != nil {
		panic(err)
	}
	defer keys.Close(ctx)
	bus := events.NewBus()
	bus.Register(keys)
	bus.Register(tracing.New(tracing.WithTracerProvider(tp)))
	members, err := repo.New[*Member](bus, repo.WithDatabase(db))
	if err != nil {
		panic(err)
	}
	if err := members.Insert(ctx, &Member{Name: "ann"}); err != nil {
		panic(err)
	}
	printTree(spans.GetSpans(), "Insert members")
	// Output:
	// Insert members (internal) db.operation.name=Insert mgmevents.inserted=1
	//   event: BeforeConvert *autokeys.Keys
	//   members.insert (client) db.operation.name=insert
}

// printTree prints the span named root and its descendants, with two of
// their attributes and the names of their events.
func printTree(spans tracetest.SpanStubs, root string) {
	var walk func(parent trace.SpanID, depth int)
	show := func(s tracetest.SpanStub, depth int) {
		line := strings.Repeat("  ", depth) + s.Name + " (" + s.SpanKind.String() + ")"
		for _, kv := range s.Attributes {
			if kv.Key == "db.operation.name" || kv.Key == "mgmevents.inserted" {
				line += fmt.Sprintf(" %s=%s", kv.Key, kv.Value.String())
			}
		}
		fmt.Println(line)
		for _, e := range s.Events {
			fmt.Println(strings.Repeat("  ", depth+1) + "event: " + e.Name)
		}
		walk(s.SpanContext.SpanID(), depth+1)
	}
	walk = func(parent trace.SpanID, depth int) {
		for _, s := range spans {
			if s.Parent.SpanID() == parent && s.Parent.IsValid() {
				show(s, depth)
			}
		}
	}
	for _, s := range spans {
		if s.Name == root {
			show(s, 0)
		}
	}
}
