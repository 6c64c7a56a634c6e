package outbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// The CloudEvents extension attributes a Message adds to the spec's own.
// Their names follow the spec's naming rule: lower-case ASCII letters and
// digits only.
//
// The order within a document is carried by "subjectseq", not by the spec's
// "sequence" extension: that one orders every event of a source (here, of a
// collection), while Message.Seq orders the events of one subject (one
// document) only.
const (
	CloudEventTenant     = "tenant"     // Message.Tenant
	CloudEventSubjectSeq = "subjectseq" // Message.Seq: the order within the subject
	CloudEventAttempt    = "attempt"    // Message.Attempt
)

// ErrDataNotJSON matches, through errors.Is, the error of
// Message.CloudEvent for data that its JSON cannot carry as it is.
var ErrDataNotJSON = errors.New("the data cannot be carried as JSON unchanged")

const (
	cloudEventSpecVersion = "1.0"
	cloudEventDataType    = "application/json"
)

// cloudEvent is the JSON event format of a Message, in the order the spec
// lists the attributes.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject,omitempty"`
	Time            string          `json:"time,omitempty"`
	DataContentType string          `json:"datacontenttype,omitempty"`
	Tenant          string          `json:"tenant,omitempty"`
	SubjectSeq      int64           `json:"subjectseq,omitempty"`
	Attempt         int             `json:"attempt,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
}

// CloudEvent returns m as a CloudEvents 1.0 event in the structured JSON
// format:
//
//	specversion      "1.0"
//	id               m.ID
//	source           "/" + the collection (m.Source), path-escaped: "/orders"
//	type             m.Type
//	subject          m.Subject, the document's _id
//	time             m.Time in RFC 3339, UTC
//	datacontenttype  "application/json"
//	data             m.Data as relaxed MongoDB Extended JSON
//	tenant           m.Tenant
//	subjectseq       m.Seq, a JSON number: the order within the subject
//	attempt          m.Attempt, a JSON number
//
// Empty optional attributes are left out: subject, time, tenant, a zero
// Seq or Attempt, and data with its datacontenttype when m.Data is empty.
// An ID, Source or Type that is empty, a string that is not UTF-8 or holds
// control characters, a negative Seq or Attempt or one beyond the spec's
// 32-bit Integer, a Time outside the years 0000-9999 of RFC 3339, and Data
// that is not a valid BSON document are errors naming the message ID.
//
// Data that this JSON cannot carry as it is, is an error matching
// ErrDataNotJSON that names the field, never a changed copy: a key or
// string that is not valid UTF-8 (the Extended JSON writer would put
// U+FFFD in its place), a key that appears twice in a document (a JSON
// reader keeps one), a key that is an Extended JSON keyword such as "$oid"
// or "$date" (a reader would take the document for a value of that type),
// array keys other than 0, 1, 2, ..., a DBPointer namespace holding '"',
// '\' or a control character (the writer does not escape it), and a
// binary of the old subtype 2 whose inner length disagrees with its size
// (the writer keeps what the inner length counts). What relaxed Extended
// JSON leaves out is no part of a value and is not refused: whether an
// integer was an int32 or an int64, a NaN's payload, a Decimal128's
// encoding beside its value (a non-canonical one is a zero), the order of
// a regular expression's options. The BSON itself (binary
// content mode) carries all of it.
func (m Message) CloudEvent() ([]byte, error) {
	if err := m.checkCloudEvent(); err != nil {
		return nil, err
	}
	ce := cloudEvent{
		SpecVersion: cloudEventSpecVersion,
		ID:          m.ID,
		Source:      m.cloudEventSource(),
		Type:        m.Type,
		Subject:     m.Subject,
		Time:        m.cloudEventTime(),
		Tenant:      m.Tenant,
		SubjectSeq:  m.Seq,
		Attempt:     m.Attempt,
	}
	if len(m.Data) > 0 {
		if err := checkJSONData(bsoncore.Document(m.Data)); err != nil {
			return nil, fmt.Errorf("outbox: message %s: %w: %w", m.ID, ErrDataNotJSON, err)
		}
		data, err := bson.MarshalExtJSON(m.Data, false, false)
		if err != nil {
			return nil, fmt.Errorf("outbox: message %s: data as Extended JSON: %w", m.ID, err)
		}
		ce.DataContentType, ce.Data = cloudEventDataType, data
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ce); err != nil {
		return nil, fmt.Errorf("outbox: message %s: CloudEvent JSON: %w", m.ID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// CloudEventAttributes returns the context attributes of m.CloudEvent, each
// in the canonical string form of its CloudEvents type, keyed by attribute
// name: what a binary-mode protocol binding carries in headers beside the
// data. datacontenttype is not among them, as it depends on how the data
// is sent. It checks m as CloudEvent does.
func (m Message) CloudEventAttributes() (map[string]string, error) {
	if err := m.checkCloudEvent(); err != nil {
		return nil, err
	}
	attrs := map[string]string{
		"specversion": cloudEventSpecVersion,
		"id":          m.ID,
		"source":      m.cloudEventSource(),
		"type":        m.Type,
	}
	for name, v := range map[string]string{
		"subject":            m.Subject,
		"time":               m.cloudEventTime(),
		CloudEventTenant:     m.Tenant,
		CloudEventSubjectSeq: formatNonZero(m.Seq),
		CloudEventAttempt:    formatNonZero(int64(m.Attempt)),
	} {
		if v != "" {
			attrs[name] = v
		}
	}
	return attrs, nil
}

func formatNonZero(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// cloudEventSource makes the collection a URI-reference: an absolute path
// of one segment, so that a collection name holding '/', '?', '#', '%' or
// a space still names one source.
func (m Message) cloudEventSource() string { return "/" + url.PathEscape(m.Source) }

func (m Message) cloudEventTime() string {
	if m.Time.IsZero() {
		return ""
	}
	return m.Time.UTC().Format(time.RFC3339Nano)
}

// checkCloudEvent refuses what the CloudEvents spec does not allow.
func (m Message) checkCloudEvent() error {
	if m.ID == "" {
		return fmt.Errorf("outbox: message of type %q from %q: no ID, which CloudEvents requires", m.Type, m.Source)
	}
	for _, a := range []struct{ name, v string }{
		{"ID", m.ID}, {"Source", m.Source}, {"Type", m.Type}, {"Subject", m.Subject}, {"Tenant", m.Tenant},
	} {
		if err := checkAttribute(a.v); err != nil {
			return fmt.Errorf("outbox: message %s: %s %q: %w", m.ID, a.name, a.v, err)
		}
	}
	if m.Source == "" {
		return fmt.Errorf("outbox: message %s: no Source (the collection), which CloudEvents requires", m.ID)
	}
	if m.Type == "" {
		return fmt.Errorf("outbox: message %s: no Type, which CloudEvents requires", m.ID)
	}
	if m.Seq < 0 || m.Seq > math.MaxInt32 {
		return fmt.Errorf("outbox: message %s: Seq %d is outside 0..%d, the CloudEvents Integer range", m.ID, m.Seq, math.MaxInt32)
	}
	if m.Attempt < 0 || m.Attempt > math.MaxInt32 {
		return fmt.Errorf("outbox: message %s: Attempt %d is outside 0..%d, the CloudEvents Integer range", m.ID, m.Attempt, math.MaxInt32)
	}
	if y := m.Time.UTC().Year(); !m.Time.IsZero() && (y < 0 || y > 9999) {
		return fmt.Errorf("outbox: message %s: Time %s is outside the years 0000-9999 that RFC 3339 can write", m.ID, m.Time.UTC().Format(time.RFC3339))
	}
	if len(m.Data) > 0 {
		if err := validDocument(m.Data); err != nil {
			return fmt.Errorf("outbox: message %s: Data is not a valid BSON document: %w", m.ID, err)
		}
	}
	return nil
}

// checkAttribute applies the spec's String rule: Unicode text without the
// control characters U+0000-U+001F and U+007F-U+009F.
func checkAttribute(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("holds the control character %U", r)
		}
	}
	return nil
}

// validDocument is bson.Raw.Validate without its panic (on a length field
// below 5) and without the bytes it lets pass after the document's end,
// which binary mode would send and JSON would not.
func validDocument(d bson.Raw) error {
	if n, _, ok := bsoncore.ReadLength(d); !ok || n < 5 || int(n) != len(d) {
		return fmt.Errorf("its length field says %d bytes, and it has %d", n, len(d))
	}
	return d.Validate()
}
