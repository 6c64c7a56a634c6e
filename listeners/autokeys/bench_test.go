package autokeys_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
)

// Against the embedded server in this process: compare with each other.

func BenchmarkInsertManyRaw1000(b *testing.B) {
	coll := srv.Database(b).Collection("users")
	var n int64
	b.ReportAllocs()
	for b.Loop() {
		docs := make([]any, 1000)
		for j := range docs {
			n++
			docs[j] = &User{UserID: uuid.NewString(), LongID: n, UserName: "bench"}
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsertManyAutoKeys1000(b *testing.B) {
	users, _, _ := keyed[*User](b, autokeys.WithoutIndexes())
	b.ReportAllocs()
	for b.Loop() {
		ms := make([]*User, 1000)
		for j := range ms {
			ms[j] = &User{UserName: "bench"}
		}
		if err := users.InsertMany(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsertAutoKeys(b *testing.B) {
	users, _, _ := keyed[*User](b)
	b.ReportAllocs()
	for b.Loop() {
		if err := users.Insert(ctx, &User{UserName: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}
