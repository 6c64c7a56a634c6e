package tracing_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/tracing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// tree draws spans as an indented tree, children in the order they
// started, with each span's kind.
func tree(spans tracetest.SpanStubs) string {
	kids := map[trace.SpanID][]tracetest.SpanStub{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID()] = true
	}
	var roots []tracetest.SpanStub
	for _, s := range spans {
		if p := s.Parent.SpanID(); s.Parent.IsValid() && ids[p] {
			kids[p] = append(kids[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var draw func(ss []tracetest.SpanStub, depth int)
	draw = func(ss []tracetest.SpanStub, depth int) {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].StartTime.Before(ss[j].StartTime) })
		for _, s := range ss {
			fmt.Fprintf(&b, "%s%s (%s)\n", strings.Repeat("  ", depth), s.Name, s.SpanKind)
			draw(kids[s.SpanContext.SpanID()], depth+1)
		}
	}
	draw(roots, 0)
	return b.String()
}

// peek is a listener that reads beside the operation, on BeforeSave.
func peek(ctx context.Context, e *events.Event) error {
	if e.Type == events.BeforeSave {
		_, err := e.Coll.CountDocuments(ctx, bson.D{})
		return err
	}
	return nil
}

// peekedInsert inserts an Account on a rig with otelmongo and peek, traced
// with opts, and returns the spans and the operation's span.
func peekedInsert(t *testing.T, opts ...tracing.Option) (tracetest.SpanStubs, tracetest.SpanStub) {
	t.Helper()
	g := newRig(t, true, opts...)
	g.bus.Register(events.ListenerFunc(peek))
	require.NoError(t, g.accounts.Insert(ctx, &Account{Email: "a@x"}))
	spans := g.take()
	t.Logf("\n%s", tree(spans))
	ops := named(spans, "Insert accounts")
	require.Len(t, ops, 1)
	return spans, ops[0]
}

// TestListenerEvents: by default each listener call is an event on the
// operation's span, at the time it began, with its duration; the driver's
// spans (otelmongo on the same client), a listener's own database call
// included, are children of the operation's span, and no listener has a
// span.
func TestListenerEvents(t *testing.T) {
	spans, op := peekedInsert(t)
	for _, name := range []string{"accounts.insert", "accounts.aggregate"} { // the write, and peek's CountDocuments
		ss := named(spans, name)
		require.Len(t, ss, 1, name)
		assert.Equal(t, op.SpanContext.SpanID(), ss[0].Parent.SpanID(), "%s is a child of the operation's span", name)
	}
	var kids []string
	for _, s := range spans {
		if s.Parent.SpanID() == op.SpanContext.SpanID() {
			kids = append(kids, s.Name)
		}
	}
	assert.ElementsMatch(t, []string{"accounts.insert", "accounts.aggregate"}, kids, "the driver's commands, and no listener spans")

	byName := map[string]sdktrace.Event{}
	for _, e := range op.Events {
		byName[e.Name] = e
	}
	const peekSave = "BeforeSave github.com/mgmevents/mgmevents/listeners/tracing_test.peek"
	require.Contains(t, byName, "BeforeConvert *autokeys.Keys")
	require.Contains(t, byName, peekSave)
	peeking := byName[peekSave]
	a := attrs(peeking.Attributes)
	count := named(spans, "accounts.aggregate")[0]
	assert.False(t, peeking.Time.After(count.StartTime), "the event is at the time the listener began")
	if assert.IsType(t, float64(0), a["mgmevents.duration"]) {
		assert.GreaterOrEqual(t, a["mgmevents.duration"].(float64), count.EndTime.Sub(count.StartTime).Seconds(),
			"the listener's duration holds its database call")
	}
	assert.Len(t, a, 1, "the duration alone: the name says the event type and the listener")
	assert.True(t, byName["BeforeConvert *autokeys.Keys"].Time.Before(named(spans, "accounts.insert")[0].StartTime), "AutoKeys ran before the write")
}

// TestDriverAndListenerSpansNest: with WithListenerSpans, each listener
// call is a child span of the operation's, and a listener's own database
// call is a child of its span; the driver's write is a child of the
// operation's span.
func TestDriverAndListenerSpansNest(t *testing.T) {
	spans, op := peekedInsert(t, tracing.WithListenerSpans())
	assert.False(t, op.Parent.IsValid(), "the operation's span is a root here")
	assert.Empty(t, op.Events, "listener calls are spans, not events")
	child := func(name string, parent tracetest.SpanStub, kind trace.SpanKind) tracetest.SpanStub {
		t.Helper()
		ss := named(spans, name)
		require.Len(t, ss, 1, name)
		assert.Equal(t, parent.SpanContext.SpanID(), ss[0].Parent.SpanID(), "%s is a child of %s", name, parent.Name)
		assert.Equal(t, kind, ss[0].SpanKind, name)
		return ss[0]
	}
	insert := child("accounts.insert", op, trace.SpanKindClient)
	keys := child("BeforeConvert *autokeys.Keys", op, trace.SpanKindInternal)
	assert.True(t, keys.EndTime.Before(insert.StartTime), "the listener ran before the write")
	peeking := child("BeforeSave github.com/mgmevents/mgmevents/listeners/tracing_test.peek", op, trace.SpanKindInternal)
	child("accounts.aggregate", peeking, trace.SpanKindClient) // its CountDocuments
	assert.Equal(t, map[string]any{"mgmevents.event": "BeforeSave", "mgmevents.listener": "github.com/mgmevents/mgmevents/listeners/tracing_test.peek"},
		attrs(peeking.Attributes))
}

// TestVetoSpans: the listener that vetoed is named on the operation's
// span, and its own event has error.type (its own span status Error, with
// WithListenerSpans); the listeners after it did not run.
func TestVetoSpans(t *testing.T) {
	for _, withSpans := range []bool{false, true} {
		var opts []tracing.Option
		if withSpans {
			opts = append(opts, tracing.WithListenerSpans())
		}
		g := newRig(t, false, opts...)
		err := g.accounts.Insert(context.WithValue(ctx, vetoKey{}, true), &Account{Email: "a@x"})
		require.ErrorIs(t, err, errVeto)
		spans := g.take()
		op := named(spans, "Insert accounts")
		require.Len(t, op, 1)
		a := attrs(op[0].Attributes)
		assert.Equal(t, "vetoed", a["error.type"])
		assert.Equal(t, "BeforeConvert", a["mgmevents.event"])
		assert.Equal(t, "github.com/mgmevents/mgmevents/listeners/tracing_test.veto", a["mgmevents.listener"])
		assert.Equal(t, "BeforeConvert listener github.com/mgmevents/mgmevents/listeners/tracing_test.veto aborted Insert (_OTHER)",
			op[0].Status.Description)
		const vetoed, after = "BeforeConvert github.com/mgmevents/mgmevents/listeners/tracing_test.veto", "BeforeSave github.com/mgmevents/mgmevents/listeners/tracing_test.veto"
		if withSpans {
			v := named(spans, vetoed)
			require.Len(t, v, 1)
			assert.Equal(t, codes.Error, v[0].Status.Code)
			assert.Empty(t, named(spans, after))
			continue
		}
		byName := map[string]map[string]any{}
		for _, e := range op[0].Events {
			byName[e.Name] = attrs(e.Attributes)
		}
		require.Contains(t, byName, vetoed)
		assert.Equal(t, "_OTHER", byName[vetoed]["error.type"], "the veto's own error")
		assert.NotContains(t, byName, after)
		assert.NotContains(t, byName["BeforeConvert *autokeys.Keys"], "error.type")
	}
}
