package natsjs_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/outbox/natsjs"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

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
