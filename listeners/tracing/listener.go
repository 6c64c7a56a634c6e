package tracing

import (
	"context"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/opinfo"
	"go.opentelemetry.io/otel/attribute"
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
	a := t.listenerAttrs(e.Type, l)
	ctx, span := t.tracer.Start(ctx, a.name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(a.attrs...))
	return ctx, func(err error) {
		if err != nil {
			typ := opinfo.ErrorType(err)
			span.SetStatus(codes.Error, typ)
			span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		}
		span.End()
	}
}

// listenerKey names what a listener span's name and attributes come from:
// the event type, and the listener's type and, for a ListenerFunc, its
// function (opinfo.ListenerName).
type listenerKey struct {
	typ events.Type
	lt  reflect.Type
	pc  uintptr
}

// listenerAttrs returns the name and attributes of typ's span for l, made
// once per listenerKey.
func (t *Tracing) listenerAttrs(typ events.Type, l events.Listener) *spanAttrs {
	k := listenerKey{typ: typ, lt: reflect.TypeOf(l)}
	if f, ok := l.(events.ListenerFunc); ok && f != nil {
		k.pc = reflect.ValueOf(f).Pointer()
	}
	if a, ok := t.listeners.Load(k); ok {
		return a.(*spanAttrs)
	}
	name := opinfo.ListenerName(l)
	a, _ := t.listeners.LoadOrStore(k, &spanAttrs{name: typ.String() + " " + name,
		attrs: []attribute.KeyValue{attrEvent.String(typ.String()), attrListener.String(name)}})
	return a.(*spanAttrs)
}
