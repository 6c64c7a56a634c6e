package tracing

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/opinfo"
	"go.mongodb.org/mongo-driver/mongo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of this package's own.
const (
	attrModel    = attribute.Key("mgmevents.model")
	attrInserted = attribute.Key("mgmevents.inserted")
	attrMatched  = attribute.Key("mgmevents.matched")
	attrModified = attribute.Key("mgmevents.modified")
	attrUpserted = attribute.Key("mgmevents.upserted")
	attrDeleted  = attribute.Key("mgmevents.deleted")
	attrListener = attribute.Key("mgmevents.listener")
	attrEvent    = attribute.Key("mgmevents.event")
	attrDuration = attribute.Key("mgmevents.duration")
)

// opKey names what an operation's attributes come from.
type opKey struct {
	database, collection, method string
	model                        reflect.Type
}

// spanAttrs are a span's name and attributes, made once for every span
// of the same kind.
type spanAttrs struct {
	name  string
	attrs []attribute.KeyValue // read only
}

// opAttrs are what every span and measurement of one opKey share, made
// once: the span's name and attributes, the options that start it, and
// the option that gives the duration of a successful operation their set.
type opAttrs struct {
	spanAttrs
	start  []trace.SpanStartOption // read only
	record []metric.RecordOption   // read only
}

// attrsOf returns the attributes of o's operation.
func (t *Tracing) attrsOf(o *events.Operation) *opAttrs {
	k := opKey{o.Database, o.Collection, o.Method, o.ModelType}
	if a, ok := t.ops.Load(k); ok {
		return a.(*opAttrs)
	}
	attrs := []attribute.KeyValue{
		semconv.DBSystemNameMongoDB,
		semconv.DBNamespace(o.Database),
		semconv.DBCollectionName(o.Collection),
		semconv.DBOperationName(o.Method),
	}
	if o.ModelType != nil {
		attrs = append(attrs, attrModel.String(o.ModelType.String()))
	}
	attrs = slices.Clip(attrs)
	a, _ := t.ops.LoadOrStore(k, &opAttrs{
		spanAttrs: spanAttrs{o.Method + " " + o.Collection, attrs},
		start:     []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)},
		record:    []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))},
	})
	return a.(*opAttrs)
}

// Intercept runs the operation inside its span, and measures it.
func (t *Tracing) Intercept(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
	a := t.attrsOf(o)
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, a.name, a.start...)
	err := next(ctx)
	d := time.Since(start)
	failed := err != nil && !(errors.Is(err, mongo.ErrNoDocuments) && finds(o.Op))
	if span.IsRecording() {
		span.SetAttributes(counts(o)...)
		if failed {
			fail(span, err)
		}
	}
	span.End()
	record := a.record
	if failed {
		record = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(
			append(slices.Clip(a.attrs), semconv.ErrorTypeKey.String(opinfo.ErrorType(err)))...))}
	}
	t.duration.Float64Histogram.Record(ctx, d.Seconds(), record...)
	return err
}

// finds reports whether op is a read, for which finding nothing is no
// failure.
func finds(op events.Op) bool {
	return op == events.OpFind || op == events.OpFindOneAndUpdate || op == events.OpFindOneAndDelete || op == events.OpFindOneAndReplace
}

// counts returns the counts o's operation has.
func counts(o *events.Operation) []attribute.KeyValue {
	returned := semconv.DBResponseReturnedRows(int(o.Returned))
	if o.Method == "BulkWrite" { // its write models' twins, added up
		return []attribute.KeyValue{attrInserted.Int64(o.Inserted), attrMatched.Int64(o.Matched), attrModified.Int64(o.Modified),
			attrUpserted.Int64(o.Upserted), attrDeleted.Int64(o.Deleted)}
	}
	switch o.Op {
	case events.OpInsert, events.OpInsertMany:
		return []attribute.KeyValue{attrInserted.Int64(o.Inserted)}
	case events.OpReplace, events.OpReplaceOne, events.OpUpdate, events.OpUpdateOne, events.OpUpdateMany:
		return []attribute.KeyValue{attrMatched.Int64(o.Matched), attrModified.Int64(o.Modified), attrUpserted.Int64(o.Upserted)}
	case events.OpFind, events.OpAggregate, events.OpDistinct:
		return []attribute.KeyValue{returned}
	case events.OpFindOneAndUpdate, events.OpFindOneAndReplace:
		return []attribute.KeyValue{attrMatched.Int64(o.Matched), attrModified.Int64(o.Modified), attrUpserted.Int64(o.Upserted), returned}
	case events.OpFindOneAndDelete:
		return []attribute.KeyValue{attrDeleted.Int64(o.Deleted), returned}
	case events.OpDelete, events.OpDeleteOne, events.OpDeleteMany:
		return []attribute.KeyValue{attrDeleted.Int64(o.Deleted)}
	case events.OpCount, events.OpWatch:
		return nil
	}
	// An operation this package does not know yet: what it counted.
	var out []attribute.KeyValue
	for _, c := range [...]struct {
		k attribute.Key
		n int64
	}{{attrInserted, o.Inserted}, {attrMatched, o.Matched}, {attrModified, o.Modified}, {attrUpserted, o.Upserted}, {attrDeleted, o.Deleted}} {
		if c.n != 0 {
			out = append(out, c.k.Int64(c.n))
		}
	}
	if o.Returned != 0 {
		out = append(out, returned)
	}
	return out
}

// fail marks span as failed with err, described without err's text.
func fail(span trace.Span, err error) {
	typ, msg := opinfo.ErrorType(err), opinfo.Describe(err)
	span.SetStatus(codes.Error, msg)
	span.SetAttributes(semconv.ErrorTypeKey.String(typ))
	var le *events.ListenerError
	if errors.As(err, &le) {
		span.SetAttributes(attrListener.String(opinfo.ListenerName(le.Listener)), attrEvent.String(le.Type.String()))
	}
	span.AddEvent("exception", trace.WithAttributes(
		semconv.ExceptionTypeKey.String(typ), semconv.ExceptionMessageKey.String(msg)))
}
