// Package natsjs is an outbox.Publisher for NATS JetStream, on the official
// client (github.com/nats-io/nats.go/jetstream).
//
// Each message goes to one subject (see DefaultSubject) with the
// Nats-Msg-Id header set to Message.ID, so that JetStream's duplicate window
// absorbs what a relay delivers twice. Publish returns once JetStream has
// stored the message and acknowledged it. A message is a CloudEvent in one
// content mode of the CloudEvents NATS binding: by default the structured
// mode, the message's CloudEvent JSON as the payload; with WithRawData the
// binary mode, its BSON data as the payload and the attributes in "ce-"
// headers. The structured mode decodes the same by the binding's rule (the
// mode by the Content-Type header) and with the official Go SDK's JetStream
// binding (the mode by a "ce-specversion" header). In the binary mode that
// SDK binding does not percent-decode the headers: an attribute holding a
// space, '"', '%' or a character beyond ASCII reaches it encoded. See
// docs/outbox-nats.md.
//
// The stream is the application's: create one whose subjects capture the
// prefix ("outbox.>") and whose Duplicates window is longer than the
// relay's longest redelivery delay.
package natsjs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultPrefix is the first token of every default subject.
const DefaultPrefix = "outbox"

// Publisher publishes outbox messages to JetStream. It is safe for
// concurrent use.
type Publisher struct {
	js      jetstream.JetStream
	prefix  string
	subject func(outbox.Message) (string, error)
	raw     bool
	stream  string

	published  atomic.Int64
	duplicates atomic.Int64
}

// Option configures New.
type Option func(*Publisher)

// WithPrefix sets the subject prefix of DefaultSubject: one or more tokens
// separated by '.', such as "shop.events". The default is "outbox".
func WithPrefix(prefix string) Option { return func(p *Publisher) { p.prefix = prefix } }

// WithSubject replaces DefaultSubject. f's error refuses the message; a
// subject that is not a valid literal NATS subject (empty tokens,
// wildcards, whitespace) is refused too. Use EscapeToken on the parts of a
// message that go into it.
func WithSubject(f func(m outbox.Message) (string, error)) Option {
	return func(p *Publisher) { p.subject = f }
}

// WithRawData publishes Message.Data, the BSON document, as the payload
// instead of the CloudEvent JSON: the binary content mode of the CloudEvents
// NATS binding, each attribute in a "ce-" header (see Attribute), with
// "ce-datacontenttype: application/bson" and no Content-Type header. It
// carries any data, also what the JSON cannot (outbox.ErrDataNotJSON).
func WithRawData() Option { return func(p *Publisher) { p.raw = true } }

// WithStream makes JetStream refuse a message unless the named stream
// stores it, so that a subject another stream captures fails loudly.
func WithStream(name string) Option { return func(p *Publisher) { p.stream = name } }

// New returns a Publisher on js. It checks the options: a prefix or stream
// name that NATS would not accept is an error.
func New(js jetstream.JetStream, opts ...Option) (*Publisher, error) {
	if js == nil {
		return nil, errors.New("natsjs: New: JetStream is nil")
	}
	p := &Publisher{js: js, prefix: DefaultPrefix}
	for _, o := range opts {
		o(p)
	}
	if err := checkSubject(p.prefix); err != nil {
		return nil, fmt.Errorf("natsjs: WithPrefix(%q): %w", p.prefix, err)
	}
	if p.stream != "" && strings.ContainsAny(p.stream, ".*>/\\ \t\r\n") {
		return nil, fmt.Errorf("natsjs: WithStream(%q): a stream name cannot hold '.', '*', '>', a path separator or whitespace", p.stream)
	}
	return p, nil
}

// Subject returns the subject m goes to.
func (p *Publisher) Subject(m outbox.Message) (string, error) {
	if p.subject == nil {
		return DefaultSubject(p.prefix, m)
	}
	s, err := p.subject(m)
	if err != nil {
		return "", err
	}
	if err := checkSubject(s); err != nil {
		return "", err
	}
	return s, nil
}

// Publish sends m and waits for JetStream's acknowledgement, until ctx ends
// (or, without a deadline, the JetStream context's default timeout). A
// message JetStream already holds under the same ID within its duplicate
// window is acknowledged without being stored again; Stats counts it. Every
// error starts with "natsjs:" and names the message ID.
func (p *Publisher) Publish(ctx context.Context, m outbox.Message) error {
	if m.ID == "" {
		return fmt.Errorf("natsjs: message of type %q from %q: no ID, which Nats-Msg-Id needs", m.Type, m.Source)
	}
	subj, err := p.Subject(m)
	if err != nil {
		return fmt.Errorf("natsjs: message %s: %w", m.ID, err)
	}
	msg, err := p.message(subj, m)
	if err != nil {
		return fmt.Errorf("natsjs: %w", err)
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(m.ID)}
	if p.stream != "" {
		opts = append(opts, jetstream.WithExpectStream(p.stream))
	}
	ack, err := p.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		hint := ""
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			hint = " (does a stream capture this subject?)"
		}
		return fmt.Errorf("natsjs: message %s: publish to %s%s: %w", m.ID, subj, hint, err)
	}
	if ack.Duplicate {
		p.duplicates.Add(1)
	} else {
		p.published.Add(1)
	}
	return nil
}

// message is m in the Publisher's content mode: the CloudEvent JSON with a
// Content-Type header and no "ce-" header, or (raw) the BSON data with
// every attribute in a "ce-" header and no Content-Type.
func (p *Publisher) message(subj string, m outbox.Message) (*nats.Msg, error) {
	msg := nats.NewMsg(subj)
	if !p.raw {
		ce, err := m.CloudEvent()
		if err != nil {
			return nil, err
		}
		msg.Header.Set(contentTypeHeader, ContentTypeCloudEvent)
		msg.Data = ce
		return msg, nil
	}
	attrs, err := m.CloudEventAttributes()
	if err != nil {
		return nil, err
	}
	for name, v := range attrs {
		msg.Header.Set(attributePrefix+name, encodeHeader(v))
	}
	if len(m.Data) > 0 {
		msg.Header.Set(attributePrefix+"datacontenttype", ContentTypeBSON)
	}
	msg.Data = m.Data
	return msg, nil
}

// Stats counts what JetStream acknowledged.
type Stats struct {
	Published  int64 // stored as new messages
	Duplicates int64 // already stored under the same ID: absorbed by the duplicate window
}

// Stats returns the counts since New.
func (p *Publisher) Stats() Stats {
	return Stats{Published: p.published.Load(), Duplicates: p.duplicates.Load()}
}

var _ outbox.Publisher = (*Publisher)(nil)
