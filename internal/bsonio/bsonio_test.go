package bsonio_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

type user struct {
	ID       primitive.ObjectID `bson:"_id"`
	UserID   uuid.UUID          `bson:"userId"`
	LongID   int64              `bson:"longId"`
	UserName string             `bson:"userName"`
	Tags     []string           `bson:"tags"`
}

var reg = model.Registry()

func TestRoundTripWithTheRegistry(t *testing.T) {
	in := user{ID: primitive.NewObjectID(), UserID: uuid.New(), LongID: 42, UserName: "zwt", Tags: []string{"a", "b"}}
	raw, err := bsonio.Marshal(reg, &in)
	require.NoError(t, err)
	require.NoError(t, raw.Validate())
	sub, _ := raw.Lookup("userId").Binary()
	assert.Equal(t, bson.TypeBinaryUUID, sub, "the registry's UUID codec was used")
	var out user
	require.NoError(t, bsonio.Unmarshal(reg, raw, &out))
	assert.Equal(t, in, out)
}

// Each result is the caller's own: a later call does not write into it.
func TestResultsAreNotShared(t *testing.T) {
	a, err := bsonio.Marshal(reg, bson.D{{Key: "n", Value: 1}})
	require.NoError(t, err)
	keep := append([]byte(nil), a...)
	b, err := bsonio.Marshal(reg, bson.D{{Key: "n", Value: 2}})
	require.NoError(t, err)
	assert.Equal(t, keep, []byte(a))
	assert.NotEqual(t, a, b)
}

// A value that fails half way through its document leaves no broken
// encoder behind for the next call.
func TestFailedEncodeDoesNotPoisonThePool(t *testing.T) {
	for range 10 {
		_, err := bsonio.Marshal(reg, bson.D{{Key: "ok", Value: 1}, {Key: "bad", Value: make(chan int)}})
		require.Error(t, err)
		raw, err := bsonio.Marshal(reg, bson.D{{Key: "n", Value: int32(7)}})
		require.NoError(t, err)
		assert.Equal(t, int32(7), raw.Lookup("n").Int32())
	}
	var out user
	assert.Error(t, bsonio.Unmarshal(reg, []byte{1, 2, 3}, &out))
	raw, _ := bsonio.Marshal(reg, user{LongID: 3})
	require.NoError(t, bsonio.Unmarshal(reg, raw, &out))
	assert.Equal(t, int64(3), out.LongID)
}

func TestConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := int64(g*1000 + i)
				raw, err := bsonio.Marshal(reg, user{LongID: n, UserName: "x"})
				if !assert.NoError(t, err) {
					return
				}
				var out user
				if !assert.NoError(t, bsonio.Unmarshal(reg, raw, &out)) || !assert.Equal(t, n, out.LongID) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

var sample = &user{ID: primitive.NewObjectID(), UserID: uuid.New(), LongID: 42, UserName: "bench"}

// BenchmarkMarshal is the insert path's encoding of a model.
func BenchmarkMarshal(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bsonio.Marshal(reg, sample); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshal is the read path's decoding of a document.
func BenchmarkUnmarshal(b *testing.B) {
	raw, _ := bsonio.Marshal(reg, sample)
	b.ReportAllocs()
	for b.Loop() {
		var u user
		if err := bsonio.Unmarshal(reg, raw, &u); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMarshalValue: a value is encoded as a field of a document holds it,
// with the registry's codecs.
func TestMarshalValue(t *testing.T) {
	v, err := bsonio.MarshalValue(bson.NewRegistry(), json.Number("0"))
	if err != nil || v.Type != bson.TypeInt64 || v.Int64() != 0 {
		t.Fatalf("json.Number(\"0\") = %v %v, %v; want the 64-bit integer 0", v.Type, v, err)
	}
	if _, err := bsonio.MarshalValue(bson.NewRegistry(), make(chan int)); err == nil {
		t.Fatal("a channel encoded")
	}
}
