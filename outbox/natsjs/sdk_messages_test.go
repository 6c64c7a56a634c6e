package natsjs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/nats-io/nats.go"
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
