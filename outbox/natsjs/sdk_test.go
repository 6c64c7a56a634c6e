package natsjs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/outbox/natsjs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// ceHeaders maps "ce-" header names to the SDK's attributes.
var ceHeaders = spec.WithPrefix("ce-")

// sdkMessage reads a received message by the rules of the CloudEvents Go
// SDK's NATS JetStream binding, which the module proxy does not serve:
// github.com/cloudevents/sdk-go, protocol/nats_jetstream/v3/message.go
// (and v2/message.go, the same rules) at commit
// d6f403090375c4e07e693d28e1d4d8c7dd4475e9. Those rules:
//   - the message is binary if its "ce-specversion" header (looked up
//     case-sensitively) is not empty, and structured otherwise, whatever
//     its Content-Type;
//   - structured: the payload is the JSON event format;
//   - binary: each header whose name starts with "ce-" is the attribute of
//     that prefixed name, or else the extension named by the rest; the
//     header "content-type" (this spelling only) is datacontenttype; every
//     value is taken as it is, first value only, not percent-decoded; the
//     payload is the data. GetAttribute and GetExtension read the header
//     "ce-" + the name the same way.
type sdkMessage struct {
	header nats.Header
	data   []byte
}

func (m sdkMessage) ReadEncoding() binding.Encoding {
	if m.header.Get("ce-specversion") != "" {
		return binding.EncodingBinary
	}
	return binding.EncodingStructured
}

func (m sdkMessage) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.ReadEncoding() != binding.EncodingStructured {
		return binding.ErrNotStructured
	}
	return w.SetStructuredEvent(ctx, format.JSON, bytes.NewReader(m.data))
}

func (m sdkMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	if m.ReadEncoding() != binding.EncodingBinary {
		return binding.ErrNotBinary
	}
	version := ceHeaders.Version(m.header.Get("ce-specversion"))
	if version == nil {
		return errors.New("unknown specversion")
	}
	for name, values := range m.header {
		var err error
		switch {
		case strings.HasPrefix(name, "ce-") && version.Attribute(name) != nil:
			err = w.SetAttribute(version.Attribute(name), values[0])
		case strings.HasPrefix(name, "ce-"):
			err = w.SetExtension(strings.TrimPrefix(name, "ce-"), values[0])
		case name == "content-type":
			err = w.SetAttribute(version.AttributeFromKind(spec.DataContentType), values[0])
		}
		if err != nil {
			return err
		}
	}
	return w.SetData(bytes.NewBuffer(m.data))
}

func (sdkMessage) Finish(error) error { return nil }

func (m sdkMessage) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	version := ceHeaders.Version(m.header.Get("ce-specversion"))
	if version == nil {
		return nil, nil
	}
	if v := m.header.Get("ce-" + k.String()); v != "" {
		return version.AttributeFromKind(k), v
	}
	return version.AttributeFromKind(k), nil
}

func (m sdkMessage) GetExtension(name string) any {
	if v := m.header.Get("ce-" + name); v != "" {
		return v
	}
	return nil
}

// specMessage reads a received message by the CloudEvents NATS protocol
// binding (cloudevents/spec, cloudevents/bindings/nats-protocol-binding.md,
// section 3): structured if the Content-Type header (its name and value
// matched case-insensitively) is application/cloudevents, in the event
// format its suffix names; binary otherwise, each "ce-" header an attribute
// or extension, percent-decoded, its decoded bytes valid UTF-8.
type specMessage struct {
	header nats.Header
	data   []byte
}

func (m specMessage) contentType() string {
	for name, values := range m.header {
		if strings.EqualFold(name, "Content-Type") {
			return strings.ToLower(values[0])
		}
	}
	return ""
}

func (m specMessage) ReadEncoding() binding.Encoding {
	if mt, _, _ := mime.ParseMediaType(m.contentType()); strings.HasPrefix(mt, "application/cloudevents") {
		return binding.EncodingStructured
	}
	return binding.EncodingBinary
}

func (m specMessage) ReadStructured(ctx context.Context, w binding.StructuredWriter) error {
	if m.ReadEncoding() != binding.EncodingStructured {
		return binding.ErrNotStructured
	}
	f := format.Lookup(m.contentType())
	if f == nil {
		return fmt.Errorf("no event format %q", m.contentType())
	}
	return w.SetStructuredEvent(ctx, f, bytes.NewReader(m.data))
}

func (m specMessage) ReadBinary(_ context.Context, w binding.BinaryWriter) error {
	if m.ReadEncoding() != binding.EncodingBinary {
		return binding.ErrNotBinary
	}
	attrs, err := m.attributes()
	if err != nil {
		return err
	}
	version := ceHeaders.Version(attrs["specversion"])
	if version == nil {
		return fmt.Errorf("unknown specversion %q", attrs["specversion"])
	}
	for name, v := range attrs {
		var err error
		if a := version.Attribute("ce-" + name); a != nil {
			err = w.SetAttribute(a, v)
		} else {
			err = w.SetExtension(name, v)
		}
		if err != nil {
			return err
		}
	}
	return w.SetData(bytes.NewBuffer(m.data))
}

func (specMessage) Finish(error) error { return nil }

// attributes returns the "ce-" headers by lower-case attribute name,
// percent-decoded.
func (m specMessage) attributes() (map[string]string, error) {
	attrs := map[string]string{}
	for name, values := range m.header {
		if len(name) < 3 || !strings.EqualFold(name[:3], "ce-") {
			continue
		}
		v, err := url.PathUnescape(values[0])
		if err != nil || !utf8.ValidString(v) {
			return nil, fmt.Errorf("header %s %q is not percent-encoded UTF-8", name, values[0])
		}
		attrs[strings.ToLower(name[3:])] = v
	}
	return attrs, nil
}

func (m specMessage) GetAttribute(k spec.Kind) (spec.Attribute, any) {
	attrs, err := m.attributes()
	version := ceHeaders.Version(attrs["specversion"])
	if err != nil || version == nil {
		return nil, nil
	}
	if v, ok := attrs[k.String()]; ok {
		return version.AttributeFromKind(k), v
	}
	return version.AttributeFromKind(k), nil
}

func (m specMessage) GetExtension(name string) any {
	if attrs, err := m.attributes(); err == nil && attrs[name] != "" {
		return attrs[name]
	}
	return nil
}

// sdkEventMessage is a message the test publishes: its data holds several
// BSON types and characters that JSON escapes; hard puts a space in the
// collection and a non-ASCII character, a space, '"' and '%' in the tenant.
func sdkEventMessage(t *testing.T, hard bool) outbox.Message {
	t.Helper()
	oid, err := primitive.ObjectIDFromHex("665f1c2e8b3e4a0012345678")
	require.NoError(t, err)
	data, err := bson.Marshal(bson.D{
		{Key: "order", Value: oid},
		{Key: "total", Value: int32(42)},
		{Key: "note", Value: "Grüße, \"boxed\" <&> \u2028\t"},
		{Key: "placed", Value: primitive.NewDateTimeFromTime(time.Date(2024, 6, 4, 10, 30, 0, 0, time.UTC))},
		{Key: "lines", Value: bson.A{bson.D{{Key: "sku", Value: "A-1"}, {Key: "qty", Value: int32(2)}}}},
	})
	require.NoError(t, err)
	m := outbox.Message{
		ID: "0190e4d2-7c3a-7b9e-8f00-0123456789ab", Type: "order.placed", Source: "orders",
		Subject: oid.Hex(), Tenant: "acme", Seq: 3, Attempt: 2, Data: data,
		Time: time.Date(2024, 6, 4, 10, 30, 0, 123000000, time.UTC),
	}
	if hard {
		m.Source, m.Tenant = "sales orders", "Zürich \"team\" 100%"
	}
	return m
}

// received publishes m with p and returns the message a JetStream consumer
// receives.
func received(t *testing.T, p *natsjs.Publisher, s jetstream.Stream, m outbox.Message) jetstream.Msg {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, p.Publish(ctx, m))
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	got, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	return got
}

// requireEvent checks every attribute, extension and the data byte for
// byte of e, as decoded from what p published for m; raw is the binary mode.
func requireEvent(t *testing.T, e *event.Event, m outbox.Message, raw bool) {
	t.Helper()
	require.NoError(t, e.Validate())
	assert.Equal(t, event.CloudEventsVersionV1, e.SpecVersion())
	assert.Equal(t, m.ID, e.ID())
	assert.Equal(t, "/"+url.PathEscape(m.Source), e.Source())
	assert.Equal(t, m.Type, e.Type())
	assert.Equal(t, m.Subject, e.Subject())
	assert.True(t, m.Time.Equal(e.Time()), "time %v, want %v", e.Time(), m.Time)
	assert.Equal(t, "", e.DataSchema())
	exts := e.Extensions()
	assert.Len(t, exts, 3, "extensions: %v", exts)
	tenant, err := types.ToString(exts[outbox.CloudEventTenant])
	assert.NoError(t, err)
	assert.Equal(t, m.Tenant, tenant, "tenant")
	for name, want := range map[string]int64{outbox.CloudEventSubjectSeq: m.Seq, outbox.CloudEventAttempt: int64(m.Attempt)} {
		n, err := types.ToInteger(exts[name])
		assert.NoError(t, err, name)
		assert.Equal(t, want, int64(n), name)
	}
	if raw {
		assert.Equal(t, natsjs.ContentTypeBSON, e.DataContentType())
		assert.Equal(t, []byte(m.Data), e.Data(), "data byte for byte")
		return
	}
	assert.Equal(t, "application/json", e.DataContentType())
	want, err := bson.MarshalExtJSON(m.Data, false, false)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(e.Data()), "data byte for byte")
	var back bson.Raw
	require.NoError(t, bson.UnmarshalExtJSON(e.Data(), false, &back))
	assert.Equal(t, m.Data, back, "data read back as BSON")
	var d struct {
		Order struct {
			OID string `json:"$oid"`
		}
		Total int
		Note  string
	}
	require.NoError(t, e.DataAs(&d))
	assert.Equal(t, m.Subject, d.Order.OID)
	assert.Equal(t, 42, d.Total)
	assert.Equal(t, "Grüße, \"boxed\" <&> \u2028\t", d.Note)
}

// TestSDKReadsStructured decodes the default messages, as received from
// JetStream, with the SDK's own core: as its JetStream binding reads them,
// and as the binding's spec does. Both see a structured event, with every
// attribute and extension as sent and the data byte for byte.
func TestSDKReadsStructured(t *testing.T) {
	for _, hard := range []bool{false, true} {
		t.Run(fmt.Sprintf("escapes=%v", hard), func(t *testing.T) {
			_, js, s := stream(t)
			m := sdkEventMessage(t, hard)
			got := received(t, newPublisher(t, js), s, m)
			for name, msg := range map[string]binding.Message{
				"sdk binding": sdkMessage{got.Headers(), got.Data()},
				"spec":        specMessage{got.Headers(), got.Data()},
			} {
				assert.Equal(t, binding.EncodingStructured, msg.ReadEncoding(), name)
				e, err := binding.ToEvent(context.Background(), msg)
				require.NoError(t, err, name)
				requireEvent(t, e, m, false)
			}
			for name := range got.Headers() {
				assert.False(t, strings.HasPrefix(strings.ToLower(name), "ce-"), "header %s in structured mode", name)
			}
		})
	}
}

// TestSDKReadsBinary decodes WithRawData's messages the same two ways. Both
// see a binary event with the BSON data as it is. The spec's reading has
// every attribute; the SDK binding, which does not percent-decode, has
// them too unless they hold what the binding encodes: then it sees the
// encoded form, as docs/outbox-nats.md says.
func TestSDKReadsBinary(t *testing.T) {
	for _, hard := range []bool{false, true} {
		t.Run(fmt.Sprintf("escapes=%v", hard), func(t *testing.T) {
			_, js, s := stream(t)
			m := sdkEventMessage(t, hard)
			got := received(t, newPublisher(t, js, natsjs.WithRawData()), s, m)
			spec := specMessage{got.Headers(), got.Data()}
			assert.Equal(t, binding.EncodingBinary, spec.ReadEncoding())
			e, err := binding.ToEvent(context.Background(), spec)
			require.NoError(t, err)
			requireEvent(t, e, m, true)

			sdk := sdkMessage{got.Headers(), got.Data()}
			assert.Equal(t, binding.EncodingBinary, sdk.ReadEncoding())
			e, err = binding.ToEvent(context.Background(), sdk)
			require.NoError(t, err)
			if hard {
				assert.Equal(t, "/sales%2520orders", e.Source(), "the SDK sees the header as it is")
				assert.Equal(t, "Z%C3%BCrich%20%22team%22%20100%25", e.Extensions()[outbox.CloudEventTenant])
				m.Source, m.Tenant = "sales%20orders", "Z%C3%BCrich%20%22team%22%20100%25"
			}
			requireEvent(t, e, m, true)
		})
	}
}
