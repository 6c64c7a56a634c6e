package outbox_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// FuzzCloudEventData renders arbitrary bytes as data: CloudEvent does not
// panic, and unless it refuses them, its JSON has no key twice and its
// data reads back, with the driver's Extended JSON reader, as the same
// values.
func FuzzCloudEventData(f *testing.F) {
	f.Add([]byte(message(f).Data))
	f.Add([]byte(nearFaults(f)))
	for _, tc := range unfaithfulData(f) {
		f.Add([]byte(tc.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := outbox.Message{ID: "e1", Type: "t", Source: "s", Data: data}
		b, err := m.CloudEvent()
		if err == nil && len(data) > 0 {
			requireJSONCarries(t, b, data)
		}
	})
}

// requireJSONCarries checks that the CloudEvent JSON ce has no key twice in
// any object and that its data reads back as the values of data.
func requireJSONCarries(t *testing.T, ce []byte, data bson.Raw) {
	t.Helper()
	require.NoError(t, uniqueKeys(json.NewDecoder(bytes.NewReader(ce))), "%s", ce)
	var env struct{ Data json.RawMessage }
	require.NoError(t, json.Unmarshal(ce, &env))
	var back bson.Raw
	require.NoError(t, bson.UnmarshalExtJSON(env.Data, false, &back), "%s", env.Data)
	require.True(t, sameDocument(bsoncore.Document(data), bsoncore.Document(back)),
		"data changed:\n%v\nread back as\n%v\nfrom %s", data, back, env.Data)
}

// uniqueKeys reads one JSON value from dec and fails on an object that
// holds a key twice.
func uniqueKeys(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			if seen[k.(string)] {
				return errors.New("key " + k.(string) + " twice")
			}
			seen[k.(string)] = true
			if err := uniqueKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := uniqueKeys(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	if err == io.EOF {
		err = nil
	}
	return err
}

// sameDocument compares documents by value: the keys in order, and each
// value alike, where relaxed Extended JSON does not keep an integer's
// width, a NaN's payload, the encoding of a Decimal128 beside its value
// (a non-canonical one is a zero), or the order of regular expression
// options.
func sameDocument(a, b bsoncore.Document) bool {
	ea, errA := a.Elements()
	eb, errB := b.Elements()
	if errA != nil || errB != nil || len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if ea[i].Key() != eb[i].Key() || !sameValue(ea[i].Value(), eb[i].Value()) {
			return false
		}
	}
	return true
}

func sameValue(a, b bsoncore.Value) bool {
	isInt := func(v bsoncore.Value) bool { return v.Type == bson.TypeInt32 || v.Type == bson.TypeInt64 }
	switch {
	case isInt(a) && isInt(b):
		return a.AsInt64() == b.AsInt64()
	case a.Type != b.Type:
		return false
	case a.Type == bson.TypeDouble:
		x, y := a.Double(), b.Double()
		return math.Float64bits(x) == math.Float64bits(y) || math.IsNaN(x) && math.IsNaN(y)
	case a.Type == bson.TypeDecimal128:
		return a.Decimal128().String() == b.Decimal128().String()
	case a.Type == bson.TypeRegex:
		pa, oa := a.Regex()
		pb, ob := b.Regex()
		sa, sb := []byte(oa), []byte(ob)
		slices.Sort(sa)
		slices.Sort(sb)
		return pa == pb && bytes.Equal(sa, sb)
	case a.Type == bson.TypeEmbeddedDocument || a.Type == bson.TypeArray:
		return sameDocument(a.Data, b.Data)
	case a.Type == bson.TypeCodeWithScope:
		ca, da := a.CodeWithScope()
		cb, db := b.CodeWithScope()
		return ca == cb && sameDocument(da, db)
	}
	return bytes.Equal(a.Data, b.Data)
}
