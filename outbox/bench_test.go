package outbox_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/bson"
)

// BenchmarkInsertRecordingNone and BenchmarkInsertRecordingOne are the
// twins of the bench's outbox_insert_ratio: an Insert of a Recorder model
// with no event recorded, and with one.
func BenchmarkInsertRecordingNone(b *testing.B) { benchInsertRecording(b, 0) }

// BenchmarkInsertRecordingOne: see BenchmarkInsertRecordingNone.
func BenchmarkInsertRecordingOne(b *testing.B) { benchInsertRecording(b, 1) }

func benchInsertRecording(b *testing.B, events int) {
	orders, _ := setup(b, nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		o := &order{Status: "placed"}
		for range events {
			o.Record("order.placed", bson.D{{Key: "n", Value: i}})
		}
		if err := orders.Insert(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
}
