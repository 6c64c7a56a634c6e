package model_test

import (
	"fmt"
	"testing"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// The registry's own codecs for bson.Raw, primitive.ObjectID and the
// driver's _id-only struct write and read what the driver's defaults do;
// these tests hold them to it, and to the allocations they save.

// driverReg is the driver's registry, which model.Registry extends.
var driverReg = bson.NewRegistry()

// idOnly is the type the driver decodes an inserted document's _id into
// (mongo's ensureID).
type idOnly = struct {
	ID any `bson:"_id"`
}

func rawDoc(t testing.TB, v any) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(v)
	require.NoError(t, err)
	return raw
}

func TestRawEncodesAsTheDriverDoes(t *testing.T) {
	reg := model.Registry()
	inner := rawDoc(t, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: bson.A{"x", bson.D{{Key: "c", Value: 2.5}}}}})
	docs := map[string]any{
		"top level":  inner,
		"nested":     bson.D{{Key: "doc", Value: inner}, {Key: "n", Value: 1}},
		"in array":   bson.D{{Key: "docs", Value: bson.A{inner, inner}}},
		"pointer":    &inner,
		"empty":      rawDoc(t, bson.D{}),
		"odd keys":   rawDoc(t, bson.D{{Key: "", Value: 1}, {Key: "é", Value: 2}, {Key: "$set", Value: bson.D{{Key: "a.b", Value: 3}}}}),
		"many kinds": rawDoc(t, bson.D{{Key: "id", Value: primitive.NewObjectID()}, {Key: "bin", Value: primitive.Binary{Subtype: 4, Data: make([]byte, 16)}}, {Key: "null", Value: nil}, {Key: "i64", Value: int64(1 << 40)}}),
	}
	for name, v := range docs {
		want, wantErr := bsonio.Marshal(driverReg, v)
		got, err := bsonio.Marshal(reg, v)
		require.NoError(t, wantErr, name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
}

// A document that is not valid BSON fails as it does with the driver's
// encoder.
func TestRawInvalidFailsAsTheDriverDoes(t *testing.T) {
	reg := model.Registry()
	good := rawDoc(t, bson.D{{Key: "a", Value: "x"}})
	bad := map[string]bson.Raw{
		"nil":         nil,
		"short":       {1, 2},
		"no end":      good[:len(good)-1],
		"long length": append(bson.Raw{0xff, 0, 0, 0}, good[4:]...),
	}
	for name, raw := range bad {
		for _, v := range []any{raw, bson.D{{Key: "doc", Value: raw}}} {
			_, wantErr := bsonio.Marshal(driverReg, v)
			_, err := bsonio.Marshal(reg, v)
			require.Error(t, wantErr, name)
			require.Error(t, err, name)
			assert.Equal(t, wantErr.Error(), err.Error(), name)
		}
	}
}

// Copying a document allocates no string per key.
//
//genv2:omit driver v2's value readers and writers take no raw bytes: the fast path is v1's
func TestRawEncodeAllocatesNoKeys(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates; this runs without it")
	}
	reg := model.Registry()
	d := bson.D{}
	for i := range 20 {
		d = append(d, bson.E{Key: fmt.Sprintf("field%d", i), Value: i})
	}
	raw := rawDoc(t, d)
	_, _ = bsonio.Marshal(reg, raw)
	fast := testing.AllocsPerRun(100, func() { _, _ = bsonio.Marshal(reg, raw) })
	slow := testing.AllocsPerRun(100, func() { _, _ = bsonio.Marshal(driverReg, raw) })
	assert.LessOrEqual(t, fast+20, slow, "the driver's copy allocates a string per key")
}

func TestObjectIDEncodesAsTheDriverDoes(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates; this runs without it")
	}
	type doc struct {
		ID    primitive.ObjectID   `bson:"_id,omitempty"`
		Other primitive.ObjectID   `bson:"other"`
		Ptr   *primitive.ObjectID  `bson:"ptr"`
		List  []primitive.ObjectID `bson:"list"`
	}
	id := primitive.NewObjectID()
	for _, v := range []any{&doc{}, &doc{ID: id, Other: id, Ptr: &id, List: []primitive.ObjectID{id, {}}}, bson.D{{Key: "id", Value: id}}} {
		want, err := bsonio.Marshal(driverReg, v)
		require.NoError(t, err)
		got, err := bsonio.Marshal(model.Registry(), v)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	// One allocation fewer: the ID is not copied to the heap to be read.
	v, reg := &doc{ID: id, Other: id}, model.Registry()
	fast := testing.AllocsPerRun(100, func() { _, _ = bsonio.Marshal(reg, v) })
	slow := testing.AllocsPerRun(100, func() { _, _ = bsonio.Marshal(driverReg, v) })
	assert.Less(t, fast, slow)
}

// The _id-only struct decodes as the struct codec decodes it: the last
// element whose key is "_id" in any case, any BSON type, nothing when the
// document has no _id, and the struct codec's errors.
func TestIDOnlyDecodesAsTheDriverDoes(t *testing.T) {
	reg := model.Registry()
	id := primitive.NewObjectID()
	docs := map[string]bson.Raw{
		"first":      rawDoc(t, bson.D{{Key: "_id", Value: id}, {Key: "name", Value: "x"}, {Key: "userName", Value: "y"}}),
		"last":       rawDoc(t, bson.D{{Key: "name", Value: "x"}, {Key: "_id", Value: id}}),
		"upper case": rawDoc(t, bson.D{{Key: "_ID", Value: id}}),
		"twice":      rawDoc(t, bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "_Id", Value: id}}),
		"then int":   rawDoc(t, bson.D{{Key: "_id", Value: id}, {Key: "_id", Value: int64(7)}}),
		"string":     rawDoc(t, bson.D{{Key: "_id", Value: "key"}}),
		"int":        rawDoc(t, bson.D{{Key: "_id", Value: int64(42)}}),
		"document":   rawDoc(t, bson.D{{Key: "_id", Value: bson.D{{Key: "a", Value: 1}}}}),
		"binary":     rawDoc(t, bson.D{{Key: "_id", Value: primitive.Binary{Subtype: 4, Data: make([]byte, 16)}}}),
		"null":       rawDoc(t, bson.D{{Key: "_id", Value: nil}}),
		"none":       rawDoc(t, bson.D{{Key: "name", Value: "x"}, {Key: "_idx", Value: 1}, {Key: "id", Value: 2}}),
		"empty":      rawDoc(t, bson.D{}),
	}
	for name, raw := range docs {
		for _, prior := range []any{nil, "before"} {
			want, got := idOnly{ID: prior}, idOnly{ID: prior}
			wantErr := bsonio.Unmarshal(driverReg, raw, &want)
			err := bsonio.Unmarshal(reg, raw, &got)
			assert.Equal(t, wantErr, err, name)
			assert.Equal(t, want, got, name)
		}
		// Inside a document, as a value.
		var wantIn, gotIn struct{ Doc idOnly }
		outer := rawDoc(t, bson.D{{Key: "doc", Value: raw}})
		require.NoError(t, bsonio.Unmarshal(driverReg, outer, &wantIn))
		require.NoError(t, bsonio.Unmarshal(reg, outer, &gotIn))
		assert.Equal(t, wantIn, gotIn, name)
	}
	var wantNull, gotNull struct{ Doc idOnly }
	wantNull.Doc.ID, gotNull.Doc.ID = "set", "set"
	null := rawDoc(t, bson.D{{Key: "doc", Value: nil}})
	require.NoError(t, bsonio.Unmarshal(driverReg, null, &wantNull))
	require.NoError(t, bsonio.Unmarshal(reg, null, &gotNull))
	assert.Equal(t, wantNull, gotNull, "a null document zeroes the struct")

	bad := rawDoc(t, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: "x"}})
	bad = bad[:len(bad)-3]
	var a, b idOnly
	assert.Error(t, bsonio.Unmarshal(driverReg, bad, &a))
	assert.Error(t, bsonio.Unmarshal(reg, bad, &b))
}

// Reading an inserted document's _id allocates the ID's interface, not a
// string per key.
//
//genv2:omit driver v2's value readers and writers take no raw bytes: the fast path is v1's
func TestIDOnlyDecodeAllocatesNoKeys(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates; this runs without it")
	}
	reg := model.Registry()
	d := bson.D{{Key: "_id", Value: primitive.NewObjectID()}}
	for i := range 20 {
		d = append(d, bson.E{Key: fmt.Sprintf("Field%d", i), Value: i})
	}
	raw := rawDoc(t, d)
	decode := func(reg *bsoncodec.Registry) func() {
		return func() {
			var id idOnly
			_ = bsonio.Unmarshal(reg, raw, &id)
		}
	}
	fast := testing.AllocsPerRun(100, decode(reg))
	slow := testing.AllocsPerRun(100, decode(driverReg))
	assert.LessOrEqual(t, fast, 4.0, "the reader (2), the struct and the ID")
	assert.GreaterOrEqual(t, slow, 20.0, "the struct codec allocates each key")
}
