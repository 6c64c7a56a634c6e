package tracing

import (
	"context"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/opinfo"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// TraceListener starts a child span of the operation's, named after the
// event and the listener ("BeforeConvert *listeners.AutoKeys"), for one
// listener call: the listener's time, and its own database calls as its
// children. Outside a recording span it does nothing.
func (t *Tracing) TraceListener(ctx context.Context, e *events.Event, l events.Listener) (context.Context, func(error)) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	name := opinfo.ListenerName(l)
	ctx, span := t.tracer.Start(ctx, e.Type.String()+" "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrEvent.String(e.Type.String()), attrListener.String(name)))
	return ctx, func(err error) {
		if err != nil {
			typ := opinfo.ErrorType(err)
			span.SetStatus(codes.Error, typ)
			span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		}
		span.End()
	}
}
