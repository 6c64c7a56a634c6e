package tracing

import (
	"context"
	"reflect"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/opinfo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// TraceListener times one listener call. By default it adds an event to
// the operation's span when the call returns, named after the event type
// and the listener ("BeforeConvert *autokeys.Keys"), at the time the
// call began, with mgmevents.duration (seconds) and, when the listener
// failed, error.type. With WithListenerSpans the call is a child span of
// the operation's instead, with the same name, mgmevents.event and
// mgmevents.listener, and the listener's own database calls as its
// children. Outside a recording span it does nothing.
func (t *Tracing) TraceListener(ctx context.Context, e *events.Event, l events.Listener) (context.Context, func(error)) {
	op := trace.SpanFromContext(ctx)
	if !op.IsRecording() {
		return ctx, nil
	}
	a := t.listenerAttrs(e.Type, l)
	if !t.listenerSpans {
		start := time.Now()
		return ctx, func(err error) {
			d := attrDuration.Float64(time.Since(start).Seconds())
			if err == nil {
				op.AddEvent(a.name, trace.WithTimestamp(start), trace.WithAttributes(d))
				return
			}
			op.AddEvent(a.name, trace.WithTimestamp(start), trace.WithAttributes(d, semconv.ErrorTypeKey.String(opinfo.ErrorType(err))))
		}
	}
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

// listenerKey names what the name and attributes of a listener call's
// event or span come from: the event type, and the listener's type and,
// for a ListenerFunc, its function (opinfo.ListenerName).
type listenerKey struct {
	typ events.Type
	lt  reflect.Type
	pc  uintptr
}

// listenerAttrs returns the name of l's event or span for typ, and the
// attributes of its span, made once per listenerKey.
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
