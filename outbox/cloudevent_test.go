package outbox_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// message is a fully populated Message with data of several BSON types.
func message(t testing.TB) outbox.Message {
	t.Helper()
	oid, err := primitive.ObjectIDFromHex("665f1c2e8b3e4a0012345678")
	require.NoError(t, err)
	placed := time.Date(2024, 6, 4, 10, 30, 0, 0, time.UTC)
	data, err := bson.Marshal(bson.D{
		{Key: "order", Value: oid},
		{Key: "total", Value: int32(42)},
		{Key: "note", Value: "<fragile> & \"boxed\""},
		{Key: "placed", Value: primitive.NewDateTimeFromTime(placed)},
		{Key: "lines", Value: bson.A{bson.D{{Key: "sku", Value: "A-1"}, {Key: "qty", Value: int32(2)}}}},
	})
	require.NoError(t, err)
	return outbox.Message{
		ID:      "0190e4d2-7c3a-7b9e-8f00-0123456789ab",
		Type:    "order.placed",
		Source:  "orders",
		Subject: oid.Hex(),
		Tenant:  "acme",
		Seq:     3,
		Time:    time.Date(2024, 6, 4, 12, 30, 0, 123000000, time.FixedZone("CEST", 2*3600)),
		Data:    data,
		Attempt: 2,
	}
}

// TestCloudEventGolden pins the whole structured-mode JSON: attribute
// names, their order, the source mapping, the time in UTC and the data as
// relaxed Extended JSON, HTML characters left as they are.
func TestCloudEventGolden(t *testing.T) {
	got, err := message(t).CloudEvent()
	require.NoError(t, err)
	want := `{"specversion":"1.0","id":"0190e4d2-7c3a-7b9e-8f00-0123456789ab","source":"/orders",` +
		`"type":"order.placed","subject":"665f1c2e8b3e4a0012345678","time":"2024-06-04T10:30:00.123Z",` +
		`"datacontenttype":"application/json","tenant":"acme","subjectseq":3,"attempt":2,` +
		`"data":{"order":{"$oid":"665f1c2e8b3e4a0012345678"},"total":42,"note":"<fragile> & \"boxed\"",` +
		`"placed":{"$date":"2024-06-04T10:30:00Z"},"lines":[{"sku":"A-1","qty":2}]}}`
	assert.Equal(t, want, string(got))
}

// TestCloudEventRoundTrip decodes the JSON with encoding/json, checks every
// attribute, and turns data back into the very BSON bytes it came from.
func TestCloudEventRoundTrip(t *testing.T) {
	m := message(t)
	b, err := m.CloudEvent()
	require.NoError(t, err)
	var ce struct {
		SpecVersion     string          `json:"specversion"`
		ID              string          `json:"id"`
		Source          string          `json:"source"`
		Type            string          `json:"type"`
		Subject         string          `json:"subject"`
		Time            time.Time       `json:"time"`
		DataContentType string          `json:"datacontenttype"`
		Tenant          string          `json:"tenant"`
		SubjectSeq      int64           `json:"subjectseq"`
		Attempt         int             `json:"attempt"`
		Data            json.RawMessage `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&ce))
	assert.Equal(t, "1.0", ce.SpecVersion)
	assert.Equal(t, m.ID, ce.ID)
	assert.Equal(t, "/"+m.Source, ce.Source)
	assert.Equal(t, m.Type, ce.Type)
	assert.Equal(t, m.Subject, ce.Subject)
	assert.True(t, m.Time.Equal(ce.Time), "time %v, want %v", ce.Time, m.Time)
	assert.Equal(t, "application/json", ce.DataContentType)
	assert.Equal(t, m.Tenant, ce.Tenant)
	assert.Equal(t, m.Seq, ce.SubjectSeq)
	assert.Equal(t, m.Attempt, ce.Attempt)
	var data bson.Raw
	require.NoError(t, bson.UnmarshalExtJSON(ce.Data, false, &data))
	assert.Equal(t, m.Data, data, "data did not survive the round trip")
}

// TestCloudEventOmitsEmpty leaves out every optional attribute that is
// empty, and data with its content type when there is no data.
func TestCloudEventOmitsEmpty(t *testing.T) {
	for _, data := range []bson.Raw{nil, {}} {
		b, err := outbox.Message{ID: "e1", Type: "order.placed", Source: "orders", Data: data}.CloudEvent()
		require.NoError(t, err)
		assert.Equal(t, `{"specversion":"1.0","id":"e1","source":"/orders","type":"order.placed"}`, string(b))
	}
	// An empty document is data, not the absence of it.
	empty, err := bson.Marshal(bson.D{})
	require.NoError(t, err)
	b, err := outbox.Message{ID: "e2", Type: "t", Source: "s", Data: empty}.CloudEvent()
	require.NoError(t, err)
	assert.Equal(t, `{"specversion":"1.0","id":"e2","source":"/s","type":"t","datacontenttype":"application/json","data":{}}`, string(b))
}

// TestCloudEventSourceEscapes keeps a collection name one path segment of
// the URI-reference, whatever it holds.
func TestCloudEventSourceEscapes(t *testing.T) {
	attrs, err := outbox.Message{ID: "e1", Type: "t", Source: "sales/orders 2024?#%"}.CloudEventAttributes()
	require.NoError(t, err)
	assert.Equal(t, "/sales%2Forders%202024%3F%23%25", attrs["source"])
}

// TestCloudEventAttributes gives the same attributes as the JSON, as
// strings, without data or its content type.
func TestCloudEventAttributes(t *testing.T) {
	m := message(t)
	attrs, err := m.CloudEventAttributes()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"specversion": "1.0",
		"id":          m.ID,
		"source":      "/orders",
		"type":        "order.placed",
		"subject":     m.Subject,
		"time":        "2024-06-04T10:30:00.123Z",
		"tenant":      "acme",
		"subjectseq":  "3",
		"attempt":     "2",
	}, attrs)
	attrs, err = outbox.Message{ID: "e1", Type: "t", Source: "s"}.CloudEventAttributes()
	require.NoError(t, err)
	assert.Len(t, attrs, 4, "empty optional attributes are absent: %v", attrs)
}

// TestCloudEventRefusesBadMessages names the message ID and the fault, and
// returns no JSON, for each message the spec does not allow.
func TestCloudEventRefusesBadMessages(t *testing.T) {
	truncated := message(t).Data[:20]
	badLength := append(bson.Raw{}, message(t).Data...)
	badLength[0]++
	for _, tc := range []struct {
		name string
		edit func(*outbox.Message)
		want string
	}{
		{"invalid data", func(m *outbox.Message) { m.Data = truncated }, "Data is not a valid BSON document"},
		{"data length wrong", func(m *outbox.Message) { m.Data = badLength }, "Data is not a valid BSON document"},
		{"data length zero", func(m *outbox.Message) { m.Data = bson.Raw{0, 0, 0, 0} }, "Data is not a valid BSON document"},
		{"bytes after the data", func(m *outbox.Message) { m.Data = append(m.Data, 0) }, "Data is not a valid BSON document: its length field says"},
		{"no source", func(m *outbox.Message) { m.Source = "" }, "no Source"},
		{"no type", func(m *outbox.Message) { m.Type = "" }, "no Type"},
		{"negative seq", func(m *outbox.Message) { m.Seq = -1 }, "Seq -1"},
		{"seq beyond int32", func(m *outbox.Message) { m.Seq = math.MaxInt32 + 1 }, "Seq 2147483648"},
		{"negative attempt", func(m *outbox.Message) { m.Attempt = -1 }, "Attempt -1"},
		{"control character", func(m *outbox.Message) { m.Type = "order\nplaced" }, `Type "order\nplaced": holds the control character U+000A`},
		{"not UTF-8", func(m *outbox.Message) { m.Tenant = "ac\xffme" }, "Tenant \"ac\\xffme\": not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := message(t)
			tc.edit(&m)
			b, err := m.CloudEvent()
			require.Error(t, err)
			assert.Nil(t, b)
			assert.Contains(t, err.Error(), "outbox: message "+m.ID+": ")
			assert.Contains(t, err.Error(), tc.want)
			_, err2 := m.CloudEventAttributes()
			assert.EqualError(t, err2, err.Error())
		})
	}
	m := message(t)
	m.ID = ""
	_, err := m.CloudEvent()
	assert.EqualError(t, err, `outbox: message of type "order.placed" from "orders": no ID, which CloudEvents requires`)
	assert.False(t, strings.Contains(err.Error(), "acme"))
}
