package natsjs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/outbox/natsjs"
	"github.com/mgmevents/mgmevents/outbox/natsjs/natstest"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// stream starts a server and creates the stream "OUTBOX" on "outbox.>",
// with a two-minute duplicate window.
func stream(t *testing.T) (*natstest.Server, jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	srv := natstest.Start(t)
	js := srv.TestJetStream(t)
	s, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name:       "OUTBOX",
		Subjects:   []string{"outbox.>"},
		Duplicates: 2 * time.Minute,
	})
	require.NoError(t, err)
	return srv, js, s
}

func msg(t *testing.T, id, subject string, seq int64, typ string) outbox.Message {
	t.Helper()
	data, err := bson.Marshal(bson.D{{Key: "order", Value: subject}, {Key: "seq", Value: seq}})
	require.NoError(t, err)
	return outbox.Message{
		ID: id, Type: typ, Source: "orders", Subject: subject, Tenant: "acme", Seq: seq,
		Time: time.Date(2024, 6, 4, 10, 0, int(seq), 0, time.UTC), Data: data, Attempt: 1,
	}
}

func count(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

func newPublisher(t *testing.T, js jetstream.JetStream, opts ...natsjs.Option) *natsjs.Publisher {
	t.Helper()
	p, err := natsjs.New(js, opts...)
	require.NoError(t, err)
	return p
}

// TestPublishConsumeInOrder publishes the events of two documents,
// interleaved, and reads them back through a JetStream consumer: same
// order, one subject per collection and type, the ID in Nats-Msg-Id, and
// the CloudEvent JSON as the payload, with no ce- header beside it.
func TestPublishConsumeInOrder(t *testing.T) {
	ctx := context.Background()
	_, js, s := stream(t)
	p := newPublisher(t, js)
	var sent []outbox.Message
	for i := range 10 {
		doc := fmt.Sprintf("doc%d", i%2)
		typ := "order.placed"
		if i >= 2 {
			typ = "order.line.added"
		}
		m := msg(t, fmt.Sprintf("id-%02d", i), doc, int64(i/2+1), typ)
		require.NoError(t, p.Publish(ctx, m))
		sent = append(sent, m)
	}
	assert.Equal(t, natsjs.Stats{Published: 10}, p.Stats())

	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	batch, err := cons.Fetch(len(sent), jetstream.FetchMaxWait(5*time.Second))
	require.NoError(t, err)
	i := 0
	for got := range batch.Messages() {
		m := sent[i]
		i++
		want := "outbox.orders.order.placed"
		if m.Type == "order.line.added" {
			want = "outbox.orders.order.line.added"
		}
		assert.Equal(t, want, got.Subject())
		h := got.Headers()
		assert.Equal(t, m.ID, h.Get(jetstream.MsgIDHeader))
		assert.Equal(t, natsjs.ContentTypeCloudEvent, h.Get("Content-Type"))
		assert.Len(t, h, 2, "Nats-Msg-Id and Content-Type only: %v", h)
		ce, err := m.CloudEvent()
		require.NoError(t, err)
		assert.JSONEq(t, string(ce), string(got.Data()))
	}
	require.NoError(t, batch.Error())
	assert.Equal(t, len(sent), i, "messages consumed")
}

// TestPublishTwiceStoresOnce redelivers a message, as a relay does after a
// lost acknowledgement: JetStream keeps the first copy only, because of
// Nats-Msg-Id, and the Publisher counts the duplicate.
func TestPublishTwiceStoresOnce(t *testing.T) {
	ctx := context.Background()
	_, js, s := stream(t)
	p := newPublisher(t, js)
	m := msg(t, "id-1", "doc1", 1, "order.placed")
	require.NoError(t, p.Publish(ctx, m))
	m.Attempt = 2
	require.NoError(t, p.Publish(ctx, m))
	assert.Equal(t, uint64(1), count(t, s), "messages in the stream")
	assert.Equal(t, natsjs.Stats{Published: 1, Duplicates: 1}, p.Stats())
	stored, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	var ce struct{ Attempt int }
	require.NoError(t, json.Unmarshal(stored.Data, &ce))
	assert.Equal(t, 1, ce.Attempt, "the stored copy is the first")

	// Another ID is another message.
	m.ID = "id-2"
	require.NoError(t, p.Publish(ctx, m))
	assert.Equal(t, uint64(2), count(t, s))
}

// TestPublishServerStopped fails, naming the message and the subject,
// when the server is gone, and does so when ctx ends.
func TestPublishServerStopped(t *testing.T) {
	srv, js, _ := stream(t)
	p := newPublisher(t, js)
	require.NoError(t, srv.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := p.Publish(ctx, msg(t, "id-1", "doc1", 1, "order.placed"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "natsjs: message id-1: publish to outbox.orders.order.placed")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, natsjs.Stats{}, p.Stats())
}

// TestPublishNoStream says so when no stream captures the subject.
func TestPublishNoStream(t *testing.T) {
	_, js, _ := stream(t)
	p := newPublisher(t, js, natsjs.WithPrefix("elsewhere"))
	err := p.Publish(context.Background(), msg(t, "id-1", "doc1", 1, "order.placed"))
	assert.ErrorIs(t, err, jetstream.ErrNoStreamResponse)
	assert.ErrorContains(t, err, "natsjs: message id-1: publish to elsewhere.orders.order.placed (does a stream capture this subject?)")
}

// TestWithStream refuses a message that another stream would store.
func TestWithStream(t *testing.T) {
	ctx := context.Background()
	_, js, s := stream(t)
	err := newPublisher(t, js, natsjs.WithStream("OTHER")).Publish(ctx, msg(t, "id-1", "doc1", 1, "order.placed"))
	assert.ErrorContains(t, err, "natsjs: message id-1: publish to outbox.orders.order.placed")
	assert.Equal(t, uint64(0), count(t, s))
	require.NoError(t, newPublisher(t, js, natsjs.WithStream("OUTBOX")).Publish(ctx, msg(t, "id-1", "doc1", 1, "order.placed")))
	assert.Equal(t, uint64(1), count(t, s))
}

// TestRawData publishes the BSON document itself, the attributes in
// headers: the CloudEvents binary content mode.
func TestRawData(t *testing.T) {
	ctx := context.Background()
	_, js, s := stream(t)
	m := msg(t, "id-1", "doc1", 1, "order.placed")
	m.Tenant = "Zürich \"team\" 100%"
	require.NoError(t, newPublisher(t, js, natsjs.WithRawData()).Publish(ctx, m))
	got, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []byte(m.Data), got.Data)
	assert.Equal(t, "", got.Header.Get("Content-Type"), "binary mode has no Content-Type")
	assert.Equal(t, natsjs.ContentTypeBSON, got.Header.Get("ce-datacontenttype"))
	assert.Equal(t, "Z%C3%BCrich%20%22team%22%20100%25", got.Header.Get("ce-tenant"), "percent-encoded as the binding says")
	tenant, err := natsjs.Attribute(got.Header, "tenant")
	require.NoError(t, err)
	assert.Equal(t, m.Tenant, tenant)
	var data bson.D
	require.NoError(t, bson.Unmarshal(got.Data, &data))
	assert.Equal(t, "doc1", data[0].Value)
}

// TestBadSubjectTokens maps every name to a subject that means what it
// says: a '.', space, wildcard or '%' in a collection or a type part is
// escaped, so a filter on another collection does not see it, and what
// cannot be mapped is refused before anything is sent.
func TestBadSubjectTokens(t *testing.T) {
	for _, tc := range []struct{ source, typ, want string }{
		{"orders", "order.placed", "outbox.orders.order.placed"},
		{"sales.orders", "placed", "outbox.sales%2Eorders.placed"},
		{"my orders", "order placed", "outbox.my%20orders.order%20placed"},
		{"*", ">", "outbox.%2A.%3E"},
		{"100%", "a.b-c_d", "outbox.100%25.a.b-c_d"},
		{"commandes", "créée", "outbox.commandes.cr%C3%A9%C3%A9e"},
		{"$sys", "x\ty", "outbox.%24sys.x%09y"},
	} {
		got, err := natsjs.DefaultSubject("outbox", outbox.Message{Source: tc.source, Type: tc.typ})
		require.NoError(t, err, "%q %q", tc.source, tc.typ)
		assert.Equal(t, tc.want, got, "%q %q", tc.source, tc.typ)
	}

	ctx := context.Background()
	_, js, s := stream(t)
	p := newPublisher(t, js)
	m := msg(t, "id-1", "doc1", 1, "placed")
	m.Source = "a.b"
	require.NoError(t, p.Publish(ctx, m))
	for filter, want := range map[string]uint64{"outbox.a.>": 0, "outbox.a%2Eb.placed": 1} {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		require.NoError(t, err)
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		assert.Equal(t, want, n, "messages on %s", filter)
	}

	for _, tc := range []struct {
		edit func(*outbox.Message)
		want string
	}{
		{func(m *outbox.Message) { m.Type = "order..placed" }, `type "order..placed" has an empty part`},
		{func(m *outbox.Message) { m.Type = ".placed" }, `type ".placed" has an empty part`},
		{func(m *outbox.Message) { m.Type = "placed." }, `type "placed." has an empty part`},
		{func(m *outbox.Message) { m.Type = "" }, "no Type"},
		{func(m *outbox.Message) { m.Source = "" }, "no Source"},
	} {
		m := msg(t, "id-bad", "doc1", 1, "placed")
		tc.edit(&m)
		err := p.Publish(ctx, m)
		assert.ErrorIs(t, err, natsjs.ErrSubject)
		assert.ErrorContains(t, err, "natsjs: message id-bad: ")
		assert.ErrorContains(t, err, tc.want)
	}
	assert.Equal(t, uint64(1), count(t, s), "nothing refused reached the stream")
}

// TestWithSubject checks a custom mapping's result like any subject.
func TestWithSubject(t *testing.T) {
	ctx := context.Background()
	_, js, s := stream(t)
	to := func(subj string) natsjs.Option {
		return natsjs.WithSubject(func(outbox.Message) (string, error) { return subj, nil })
	}
	for subj, want := range map[string]string{
		"outbox.*":      "wildcard",
		"outbox.>":      "wildcard",
		"outbox..x":     "empty token",
		"outbox.a b":    "whitespace",
		"":              "empty",
		"outbox.x\r\ny": "whitespace",
	} {
		err := newPublisher(t, js, to(subj)).Publish(ctx, msg(t, "id-1", "doc1", 1, "placed"))
		assert.ErrorIs(t, err, natsjs.ErrSubject, "%q", subj)
		assert.ErrorContains(t, err, want, "%q", subj)
	}
	refuse := errors.New("no subject for this type")
	err := newPublisher(t, js, natsjs.WithSubject(func(outbox.Message) (string, error) { return "", refuse })).
		Publish(ctx, msg(t, "id-1", "doc1", 1, "placed"))
	assert.ErrorIs(t, err, refuse)
	assert.ErrorContains(t, err, "natsjs: message id-1: ")
	assert.Equal(t, uint64(0), count(t, s))

	p := newPublisher(t, js, natsjs.WithSubject(func(m outbox.Message) (string, error) {
		return "outbox.by-tenant." + natsjs.EscapeToken(m.Tenant), nil
	}))
	require.NoError(t, p.Publish(ctx, msg(t, "id-1", "doc1", 1, "placed")))
	got, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, "outbox.by-tenant.acme", got.Subject)
}

// TestNewRefusesBadOptions refuses, at New, what NATS would refuse later.
func TestNewRefusesBadOptions(t *testing.T) {
	_, js, _ := stream(t)
	_, err := natsjs.New(nil)
	assert.EqualError(t, err, "natsjs: New: JetStream is nil")
	for _, prefix := range []string{"", "a..b", ".a", "a.", "a.*", "a.>", "a b"} {
		_, err := natsjs.New(js, natsjs.WithPrefix(prefix))
		assert.ErrorIs(t, err, natsjs.ErrSubject, "%q", prefix)
		assert.ErrorContains(t, err, fmt.Sprintf("natsjs: WithPrefix(%q): ", prefix))
	}
	for _, name := range []string{"a.b", "a*", "a>", "a/b", "a b"} {
		_, err := natsjs.New(js, natsjs.WithStream(name))
		assert.ErrorContains(t, err, fmt.Sprintf("natsjs: WithStream(%q)", name))
	}
	p, err := natsjs.New(js, natsjs.WithPrefix("shop.events"))
	require.NoError(t, err)
	subj, err := p.Subject(outbox.Message{Source: "orders", Type: "placed"})
	require.NoError(t, err)
	assert.Equal(t, "shop.events.orders.placed", subj)
}

// TestPublishRefusesBadMessages sends nothing for a message without an ID
// or with data that is not BSON, and says which.
func TestPublishRefusesBadMessages(t *testing.T) {
	ctx := context.Background()
	_, js, s := stream(t)
	p := newPublisher(t, js)
	m := msg(t, "", "doc1", 1, "placed")
	assert.EqualError(t, p.Publish(ctx, m), `natsjs: message of type "placed" from "orders": no ID, which Nats-Msg-Id needs`)
	m = msg(t, "id-1", "doc1", 1, "placed")
	m.Data = m.Data[:len(m.Data)-3]
	err := p.Publish(ctx, m)
	assert.ErrorContains(t, err, "natsjs: outbox: message id-1: Data is not a valid BSON document")
	err = newPublisher(t, js, natsjs.WithRawData()).Publish(ctx, m)
	assert.ErrorContains(t, err, "natsjs: outbox: message id-1: Data is not a valid BSON document")
	assert.Equal(t, uint64(0), count(t, s))
}

// TestAttribute decodes what the binding allows and refuses the rest.
func TestAttribute(t *testing.T) {
	h := map[string][]string{"ce-type": {"order%2eplaced"}, "ce-bad": {"%zz"}, "ce-overlong": {"%C0%A0"}}
	v, err := natsjs.Attribute(h, "type")
	require.NoError(t, err)
	assert.Equal(t, "order.placed", v, "lower-case hex is accepted")
	v, err = natsjs.Attribute(h, "absent")
	require.NoError(t, err)
	assert.Equal(t, "", v)
	_, err = natsjs.Attribute(h, "bad")
	assert.ErrorContains(t, err, `natsjs: header ce-bad "%zz"`)
	_, err = natsjs.Attribute(h, "overlong")
	assert.ErrorContains(t, err, `natsjs: header ce-overlong "%C0%A0": not valid UTF-8`)
}

// TestPublishRefusesDataJSONCannotCarry sends nothing in the structured
// mode for data its JSON would change (here a string that is not UTF-8),
// and says which field; the binary mode carries the same data as it is.
func TestPublishRefusesDataJSONCannotCarry(t *testing.T) {
	ctx := context.Background()
	_, js, s := stream(t)
	m := msg(t, "id-1", "doc1", 1, "placed")
	data, err := bson.Marshal(bson.D{{Key: "note", Value: "caf\xe9"}})
	require.NoError(t, err)
	m.Data = data
	err = newPublisher(t, js).Publish(ctx, m)
	assert.ErrorIs(t, err, outbox.ErrDataNotJSON)
	assert.ErrorContains(t, err, `natsjs: outbox: message id-1: `)
	assert.ErrorContains(t, err, `data field "note": the string "caf\xe9" is not valid UTF-8`)
	assert.Equal(t, uint64(0), count(t, s))

	require.NoError(t, newPublisher(t, js, natsjs.WithRawData()).Publish(ctx, m))
	got, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, []byte(data), got.Data)
}
