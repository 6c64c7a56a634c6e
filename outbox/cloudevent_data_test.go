package outbox_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// rawDoc builds a document from elements as they are, so that it can hold
// what bson.Marshal would not write (duplicate keys, bad array keys).
func rawDoc(elems ...[]byte) bson.Raw {
	idx, d := bsoncore.AppendDocumentStart(nil)
	for _, e := range elems {
		d = append(d, e...)
	}
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return bson.Raw(d)
}

func marshal(t testing.TB, v any) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(v)
	require.NoError(t, err)
	return b
}

// unfaithfulData is data that the relaxed Extended JSON writer would
// change (or that a JSON reader would read as something else), with the
// field and the fault the error names.
func unfaithfulData(t testing.TB) []struct {
	name       string
	data       bson.Raw
	field, why string
} {
	oid := primitive.NewObjectID()
	inner := func(els ...[]byte) []byte { return bsoncore.AppendDocumentElement(nil, "lines", rawDoc(els...)) }
	return []struct {
		name       string
		data       bson.Raw
		field, why string
	}{
		{"string not UTF-8", marshal(t, bson.D{{Key: "note", Value: "caf\xe9"}}), "note", `the string "caf\xe9" is not valid UTF-8`},
		{"nested string not UTF-8", marshal(t, bson.D{{Key: "lines", Value: bson.A{bson.D{{Key: "sku", Value: "\xff"}}}}}), "lines.0.sku", "is not valid UTF-8"},
		{"key not UTF-8", marshal(t, bson.D{{Key: "caf\xe9", Value: 1}}), "caf\xe9", "the key is not valid UTF-8"},
		{"symbol not UTF-8", marshal(t, bson.D{{Key: "s", Value: primitive.Symbol("\xc3")}}), "s", `the symbol "\xc3" is not valid UTF-8`},
		{"code not UTF-8", marshal(t, bson.D{{Key: "c", Value: primitive.JavaScript("f(\xff)")}}), "c", "is not valid UTF-8"},
		{"regex not UTF-8", marshal(t, bson.D{{Key: "r", Value: primitive.Regex{Pattern: "^\xff", Options: "i"}}}), "r", "is not valid UTF-8"},
		{"scope not UTF-8", marshal(t, bson.D{{Key: "c", Value: primitive.CodeWithScope{Code: "f()", Scope: bson.D{{Key: "v", Value: "\xff"}}}}}), "c.v", "is not valid UTF-8"},
		{"duplicate key", rawDoc(bsoncore.AppendInt32Element(nil, "qty", 1), bsoncore.AppendInt32Element(nil, "qty", 2)), "qty", "the key appears twice"},
		{"duplicate nested key", rawDoc(inner(bsoncore.AppendStringElement(nil, "a", "x"), bsoncore.AppendStringElement(nil, "a", "y"))), "lines.a", "the key appears twice"},
		{"$oid key", marshal(t, bson.D{{Key: "ref", Value: bson.D{{Key: "$oid", Value: oid.Hex()}}}}), "ref.$oid", "Extended JSON keyword"},
		{"$date key", marshal(t, bson.D{{Key: "at", Value: bson.D{{Key: "$date", Value: "2024-06-04T10:30:00Z"}}}}), "at.$date", "Extended JSON keyword"},
		{"$numberLong key", marshal(t, bson.D{{Key: "n", Value: bson.D{{Key: "$numberLong", Value: "5"}}}}), "n.$numberLong", "Extended JSON keyword"},
		{"top-level keyword", marshal(t, bson.D{{Key: "$uuid", Value: "x"}}), "$uuid", "Extended JSON keyword"},
		{"array keys", rawDoc(bsoncore.AppendArrayElement(nil, "a", rawDoc(bsoncore.AppendInt32Element(nil, "5", 1)))), "a.5", "array element 0 has the key \"5\""},
		{"binary subtype 2 inner length", rawDoc(append(bsoncore.AppendHeader(nil, bson.TypeBinary, "b"), 7, 0, 0, 0, 2, 2, 0, 0, 0, 'a', 'b', 'c')), "b", "holds 3 bytes, and its inner length says 2"},
		{"DBPointer quote", marshal(t, bson.D{{Key: "p", Value: primitive.DBPointer{DB: `a","x`, Pointer: oid}}}), "p", "the DBPointer namespace"},
	}
}

// TestCloudEventRefusesDataJSONCannotCarry refuses, naming the field, each
// kind of data that the structured JSON would change, and leaves the
// attributes (and so binary mode, which carries the BSON) alone.
func TestCloudEventRefusesDataJSONCannotCarry(t *testing.T) {
	for _, tc := range unfaithfulData(t) {
		t.Run(tc.name, func(t *testing.T) {
			m := message(t)
			m.Data = tc.data
			b, err := m.CloudEvent()
			require.Error(t, err, "rendered as %s", b)
			assert.Nil(t, b)
			assert.ErrorIs(t, err, outbox.ErrDataNotJSON)
			assert.ErrorContains(t, err, "outbox: message "+m.ID+": ")
			assert.ErrorContains(t, err, fmt.Sprintf("data field %q: ", tc.field))
			assert.ErrorContains(t, err, tc.why)
			_, err = m.CloudEventAttributes()
			assert.NoError(t, err)
		})
	}
}

// nearFaults is data near the faults, of every BSON type, that JSON
// carries.
func nearFaults(t testing.TB) bson.Raw {
	nan := primitive.NewDecimal128(0x7c00000000000000, 0)
	return marshal(t, bson.D{
		{Key: "$set", Value: bson.D{{Key: "$type", Value: "string"}}},
		{Key: "owner", Value: bson.D{{Key: "$ref", Value: "users"}, {Key: "$id", Value: 7}}},
		{Key: "text", Value: "a\u2028b\x00c <&> \"q\" \\"},
		{Key: "nan", Value: nan},
		{Key: "negzero", Value: math.Copysign(0, -1)},
		{Key: "nanf", Value: math.NaN()},
		{Key: "big", Value: int64(1)<<60 + 1},
		{Key: "small", Value: int64(42)},
		{Key: "old", Value: primitive.DateTime(-1)},
		{Key: "p", Value: primitive.DBPointer{DB: "db.coll", Pointer: primitive.NewObjectID()}},
		{Key: "empty", Value: bson.A{}},
		{Key: "", Value: "empty key"},
		{Key: "bin", Value: primitive.Binary{Subtype: 2, Data: []byte("abc")}},
		{Key: "uuid", Value: primitive.Binary{Subtype: 4, Data: make([]byte, 16)}},
		{Key: "re", Value: primitive.Regex{Pattern: "^a\\d", Options: "mi"}},
		{Key: "ts", Value: primitive.Timestamp{T: 1, I: 2}},
		{Key: "code", Value: primitive.CodeWithScope{Code: "f()", Scope: bson.D{{Key: "x", Value: 1}}}},
		{Key: "sym", Value: primitive.Symbol("s")},
		{Key: "keys", Value: bson.D{{Key: "min", Value: primitive.MinKey{}}, {Key: "max", Value: primitive.MaxKey{}}, {Key: "u", Value: primitive.Undefined{}}, {Key: "n", Value: nil}}},
	})
}

// TestCloudEventKeepsWhatJSONCarries renders, and reads back unchanged,
// data near the faults: keys with '$' that are no keyword, a DBRef,
// strings with U+2028 and NUL, NaN, -0, an int64 beyond 2^53, dates out of
// the ISO range, a DBPointer with a plain namespace.
func TestCloudEventKeepsWhatJSONCarries(t *testing.T) {
	data := nearFaults(t)
	m := message(t)
	m.Data = data
	b, err := m.CloudEvent()
	require.NoError(t, err)
	requireJSONCarries(t, b, data)
}

// TestCloudEventRefusesTimeRFC3339CannotWrite refuses a time RFC 3339's
// four-digit year cannot write, in both modes.
func TestCloudEventRefusesTimeRFC3339CannotWrite(t *testing.T) {
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC)} {
		m := message(t)
		m.Time = at
		_, err := m.CloudEvent()
		assert.ErrorContains(t, err, "outbox: message "+m.ID+": Time ")
		assert.ErrorContains(t, err, "outside the years 0000-9999")
		assert.False(t, errors.Is(err, outbox.ErrDataNotJSON))
		_, err2 := m.CloudEventAttributes()
		assert.EqualError(t, err2, err.Error())
	}
	m := message(t)
	m.Time = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	_, err := m.CloudEvent()
	assert.NoError(t, err)
}

// TestRelayDeadLettersDataJSONCannotCarry: an event whose data the JSON
// cannot carry fails at every attempt of a publisher that sends the
// CloudEvent, and moves to DeadLetters with the error and its data as
// stored, where nothing changed it. The fault is an old binary whose inner
// length disagrees with its size: the test server keeps it as it is, while
// it replaces bytes that are not UTF-8 on its own and refuses duplicate
// and '$' keys.
func TestRelayDeadLettersDataJSONCannotCarry(t *testing.T) {
	orders, db := setup(t, nil)
	bad := rawDoc(append(bsoncore.AppendHeader(nil, bson.TypeBinary, "b"), 7, 0, 0, 0, 2, 2, 0, 0, 0, 'a', 'b', 'c'))
	o := &order{Status: "placed"}
	o.Record("noted", bad)
	o.Record("after", nil)
	id := o.Recorded()[0].ID
	require.NoError(t, orders.Insert(ctx, o))
	p := &recorder{fail: func(m outbox.Message) error {
		_, err := m.CloudEvent()
		return err
	}}
	r := newRelay(t, db, p, outbox.WithMaxAttempts(1))
	_, err := r.Drain(ctx)
	require.NoError(t, err)
	msgs := p.take()
	require.Len(t, msgs, 1, "the next event follows")
	assert.Equal(t, "after", msgs[0].Type)
	var dead struct {
		Error string   `bson:"error"`
		Data  bson.Raw `bson:"data"`
	}
	require.NoError(t, db.Collection(outbox.DeadLetters).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&dead))
	assert.Contains(t, dead.Error, `data field "b": the binary of subtype 2 holds 3 bytes, and its inner length says 2`)
	assert.Equal(t, bad, dead.Data, "stored unchanged")
}

// TestRelayDeadLettersUndeliverableAtOnce: a publish that fails with an
// error no attempt can overcome (ErrDataNotJSON, or one wrapping
// ErrUndeliverable) moves the message to DeadLetters at its first attempt,
// with the default WithMaxAttempts, instead of holding its document in
// backoff; the document's next event follows in the same Drain.
func TestRelayDeadLettersUndeliverableAtOnce(t *testing.T) {
	bad := rawDoc(append(bsoncore.AppendHeader(nil, bson.TypeBinary, "b"), 7, 0, 0, 0, 2, 2, 0, 0, 0, 'a', 'b', 'c'))
	for _, c := range []struct {
		name, want string
		fail       func(outbox.Message) error
	}{
		{"ErrDataNotJSON", "cannot be carried as JSON", func(m outbox.Message) error {
			_, err := m.CloudEvent()
			return err
		}},
		{"ErrUndeliverable", "message too large", func(m outbox.Message) error {
			if m.Type == "noted" {
				return fmt.Errorf("broker: message too large: %w", outbox.ErrUndeliverable)
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			orders, db := setup(t, nil)
			o := &order{Status: "placed"}
			o.Record("noted", bad)
			o.Record("after", nil)
			id := o.Recorded()[0].ID
			require.NoError(t, orders.Insert(ctx, o))
			p := &recorder{fail: c.fail}
			r := newRelay(t, db, p)
			_, err := r.Drain(ctx)
			require.NoError(t, err)
			msgs := p.take()
			require.Len(t, msgs, 1, "the next event follows at once")
			assert.Equal(t, "after", msgs[0].Type)
			var dead struct {
				Attempts int    `bson:"attempts"`
				Error    string `bson:"error"`
			}
			require.NoError(t, db.Collection(outbox.DeadLetters).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&dead))
			assert.Equal(t, 1, dead.Attempts, "one attempt, not WithMaxAttempts")
			assert.Contains(t, dead.Error, c.want)
			assert.EqualValues(t, 1, r.Stats().Failed)
			assert.EqualValues(t, 1, r.Stats().DeadLettered)
			b := box(t, db, o.ID)
			assert.Empty(t, b["q"], "nothing waits in the document")
			assert.NotContains(t, b, "hold", "no backoff")
			assert.NotContains(t, b, "a", "no attempt recorded for a retry")
		})
	}
}
