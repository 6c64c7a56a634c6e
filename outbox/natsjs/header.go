package natsjs

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

// The media types of a Publisher's messages. In the structured content
// mode (the default) the Content-Type header is ContentTypeCloudEvent and
// there is no "ce-" header: the CloudEvents NATS binding tells the modes
// apart by Content-Type, the official Go SDK by a "ce-specversion" header,
// and so both read such a message as structured. In the binary mode
// (WithRawData) there is no Content-Type header and every CloudEvents
// context attribute is a header named "ce-" + the attribute's name
// ("ce-type", "ce-subject", "ce-tenant", "ce-subjectseq", ...), its value
// percent-encoded as the binding says; Attribute reads them.
const (
	// ContentTypeCloudEvent marks a CloudEvent JSON payload: the
	// structured content mode.
	ContentTypeCloudEvent = "application/cloudevents+json"
	// ContentTypeBSON is the datacontenttype of a raw BSON payload, in the
	// "ce-datacontenttype" header: the binary content mode.
	ContentTypeBSON = "application/bson"
)

const (
	contentTypeHeader = "Content-Type"
	attributePrefix   = "ce-"
)

// encodeHeader percent-encodes v as the binding says: a space, '"', '%' and
// every byte outside printable ASCII become %XX.
func encodeHeader(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Attribute returns the CloudEvents attribute name ("type", "subject",
// "tenant", "subjectseq", ...) from the "ce-" headers of a binary-mode
// message (WithRawData), percent-decoded as the binding says. It is ""
// when the header is absent, as it is in the structured mode, and an error
// when the header is not valid percent-encoded UTF-8.
func Attribute(h nats.Header, name string) (string, error) {
	raw := h.Get(attributePrefix + name)
	if raw == "" {
		return "", nil
	}
	v, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("natsjs: header ce-%s %q: %w", name, raw, err)
	}
	if !utf8.ValidString(v) {
		return "", fmt.Errorf("natsjs: header ce-%s %q: not valid UTF-8", name, raw)
	}
	return v, nil
}
