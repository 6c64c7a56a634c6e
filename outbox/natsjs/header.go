package natsjs

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

// The payload's media type, in the Content-Type header. A Publisher also
// sets every CloudEvents context attribute of the message as a header named
// "ce-" + the attribute's name ("ce-type", "ce-subject", "ce-tenant",
// "ce-subjectseq", ...), its value percent-encoded, as the binary content
// mode of the CloudEvents NATS protocol binding says. So a consumer can
// route on them without decoding the payload; Attribute reads them.
const (
	// ContentTypeCloudEvent marks a CloudEvent JSON payload: the
	// structured content mode.
	ContentTypeCloudEvent = "application/cloudevents+json"
	// ContentTypeBSON is the datacontenttype of a raw BSON payload, in the
	// "ce-datacontenttype" header: the binary content mode. Such a message
	// has no Content-Type header.
	ContentTypeBSON = "application/bson"
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
// "tenant", "subjectseq", ...) from the "ce-" headers of a message the
// Publisher sent, percent-decoded. It is "" when the header is absent,
// and an error when the header is not valid percent-encoded UTF-8.
func Attribute(h nats.Header, name string) (string, error) {
	raw := h.Get("ce-" + name)
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
