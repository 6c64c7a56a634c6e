package model_test

import (
	"reflect"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
)

type foldedInner struct {
	Key string `bson:"key"`
}

type folded struct {
	mgm.DefaultModel `bson:",inline"`
	Tenant           string      `bson:"tenant" policy:"tenant"`
	No               int64       `bson:"no" auto:"inc"`
	Untagged         string      // stored as "untagged"
	DeletedAt        string      `bson:"deletedAt"`
	Inner            foldedInner `bson:"inner"`
}

// TestRegistryDecodesStrictly: a key that matches a field only in another
// letter case ("Tenant", "NO", "UNTAGGED", "_ID", a nested "Key") is not
// decoded into it, wherever it comes in the document; exact keys decode as
// before.
func TestRegistryDecodesStrictly(t *testing.T) {
	reg := model.Registry()
	doc, err := bson.Marshal(bson.D{
		{Key: "tenant", Value: "acme"},
		{Key: "Tenant", Value: "globex"},
		{Key: "NO", Value: int64(0)},
		{Key: "no", Value: int64(7)},
		{Key: "No", Value: int64(0)},
		{Key: "UNTAGGED", Value: "planted"},
		{Key: "deletedAt", Value: "d"},
		{Key: "inner", Value: bson.D{{Key: "key", Value: "k"}, {Key: "KEY", Value: "planted"}}},
		{Key: "Created_At", Value: "not a time"},
	})
	require.NoError(t, err)
	var m folded
	require.NoError(t, bsonio.Unmarshal(reg, doc, &m))
	assert.Equal(t, "acme", m.Tenant)
	assert.EqualValues(t, 7, m.No)
	assert.Empty(t, m.Untagged)
	assert.Equal(t, "d", m.DeletedAt)
	assert.Equal(t, "k", m.Inner.Key)

	// A folded key alone leaves the field zero.
	doc, err = bson.Marshal(bson.D{{Key: "Tenant", Value: "globex"}, {Key: "Untagged", Value: "u"}})
	require.NoError(t, err)
	m = folded{}
	require.NoError(t, bsonio.Unmarshal(reg, doc, &m))
	assert.Empty(t, m.Tenant)
	assert.Empty(t, m.Untagged)
}

// TestRegisterStrictEmptyRegistry: RegisterStrict fails on a registry
// with no struct decoder to wrap.
//
//genv2:omit driver v2 builds no registry without its default codecs
func TestRegisterStrictEmptyRegistry(t *testing.T) {
	require.Error(t, model.RegisterStrict(bsoncodec.NewRegistry()), "an empty registry")
}

// TestRegisterStrictReports: RegisterStrict fails on a nil registry, and
// DecodesStrictly tells a registry it was called on from one it was not,
// or was called on too late.
func TestRegisterStrictReports(t *testing.T) {
	require.Error(t, model.RegisterStrict(nil))

	st := reflect.TypeFor[folded]()
	assert.False(t, model.DecodesStrictly(bson.NewRegistry(), st))
	plain := bson.NewRegistry()
	require.NoError(t, model.RegisterStrict(plain))
	assert.True(t, model.DecodesStrictly(plain, st))
	require.NoError(t, model.RegisterStrict(plain), "twice")
	assert.True(t, model.DecodesStrictly(plain, st))

	late := bson.NewRegistry()
	_, err := late.LookupDecoder(st) // caches the struct codec for st
	require.NoError(t, err)
	require.NoError(t, model.RegisterStrict(late))
	assert.False(t, model.DecodesStrictly(late, st), "st's decoder was cached before")
	assert.True(t, model.DecodesStrictly(model.Registry(), st))
}

// TestStrictDecodeAllocatesNoMore: decoding strictly allocates no more
// than the driver's own struct decoding of the same document (the reader
// that skips folded keys comes from a pool).
func TestStrictDecodeAllocatesNoMore(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates; this runs without it")
	}
	doc, err := bson.Marshal(bson.D{{Key: "tenant", Value: "acme"}, {Key: "no", Value: int64(7)}, {Key: "inner", Value: bson.D{{Key: "key", Value: "k"}}}})
	require.NoError(t, err)
	strict, plain := model.Registry(), bson.NewRegistry()
	decode := func(reg *bsoncodec.Registry) func() {
		return func() {
			var m folded
			if err := bsonio.Unmarshal(reg, doc, &m); err != nil {
				t.Fatal(err)
			}
		}
	}
	decode(strict)()
	decode(plain)()
	s, p := testing.AllocsPerRun(200, decode(strict)), testing.AllocsPerRun(200, decode(plain))
	assert.LessOrEqual(t, s, p, "strict decoding allocates %v, the driver's %v", s, p)
}
