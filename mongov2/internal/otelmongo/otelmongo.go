// Package otelmongo traces driver v2's commands with OpenTelemetry, as
// the contrib module otelmongo does for driver v1, for the v2 line's
// tests and examples: the contrib module for driver v2 is not served where
// this line is built. Each command is a client span named
// "collection.command" (or the command alone), a child of the span in
// the operation's context.
package otelmongo

import (
	"context"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// An Option configures NewMonitor.
type Option func(*trace.TracerProvider)

// WithTracerProvider sets the provider the monitor's tracer comes from;
// the default is the global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(p *trace.TracerProvider) { *p = tp }
}

type key struct {
	conn string
	req  int64
}

// NewMonitor returns a command monitor that starts a span per command.
func NewMonitor(opts ...Option) *event.CommandMonitor {
	tp := otel.GetTracerProvider()
	for _, o := range opts {
		o(&tp)
	}
	tracer := tp.Tracer("github.com/mgmevents/mgmevents/mongov2/internal/otelmongo")
	var mu sync.Mutex
	spans := map[key]trace.Span{}
	end := func(e *event.CommandFinishedEvent, err error) {
		k := key{e.ConnectionID, e.RequestID}
		mu.Lock()
		span, ok := spans[k]
		delete(spans, k)
		mu.Unlock()
		if !ok {
			return
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
	return &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			name := e.CommandName
			attrs := []attribute.KeyValue{
				attribute.String("db.system.name", "mongodb"),
				attribute.String("db.namespace", e.DatabaseName),
				attribute.String("db.operation.name", e.CommandName),
			}
			if elt, err := e.Command.IndexErr(0); err == nil && elt.Key() == e.CommandName {
				if v := elt.Value(); v.Type == bson.TypeString {
					name = v.StringValue() + "." + name
					attrs = append(attrs, attribute.String("db.collection.name", v.StringValue()))
				}
			}
			_, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			mu.Lock()
			spans[key{e.ConnectionID, e.RequestID}] = span
			mu.Unlock()
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) { end(&e.CommandFinishedEvent, nil) },
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			end(&e.CommandFinishedEvent, fmt.Errorf("%s", e.Failure))
		},
	}
}
