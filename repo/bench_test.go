package repo_test

import (
	"context"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
)

// The insert benchmarks run against the embedded server, in this process:
// compare them with each other, not with a real deployment.

func BenchmarkInsertRawDriver(b *testing.B) {
	coll := srv.Database(b).Collection("plains")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := &plain{Name: "bench", Age: i}
		if _, err := coll.InsertOne(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsertMgm(b *testing.B) {
	coll := mgm.NewCollection(srv.Database(b), "plains")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := coll.CreateWithCtx(ctx, &plain{Name: "bench", Age: i}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchInsert times repo.Insert with three no-op listeners registered
// with opts.
func benchInsert(b *testing.B, opts ...events.Option) {
	bus := events.NewBus()
	for range 3 {
		bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), opts...)
	}
	r, err := repo.New[*plain](bus, repo.WithDatabase(srv.Database(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := r.Insert(ctx, &plain{Name: "bench", Age: i}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertRepo3Listeners has listeners on every event, so the
// repository encodes the document for them.
func BenchmarkInsertRepo3Listeners(b *testing.B) { benchInsert(b) }

func BenchmarkFindRepo(b *testing.B) {
	r, err := repo.New[*plain](events.NewBus(), repo.WithDatabase(srv.Database(b)))
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Insert(ctx, &plain{Name: "x"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.FindOne(ctx, bson.M{"name": "x"}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsertManyRaw1000(b *testing.B) {
	coll := srv.Database(b).Collection("plains")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		docs := make([]any, 1000)
		for j := range docs {
			docs[j] = &plain{Name: "bench", Age: j}
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInsertManyRepo1000(b *testing.B) {
	r, err := repo.New[*plain](events.NewBus(), repo.WithDatabase(srv.Database(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ms := make([]*plain, 1000)
		for j := range ms {
			ms[j] = &plain{Name: "bench", Age: j}
		}
		if err := r.InsertMany(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertRepoConvertOnly has listeners that never read the
// document, so the repository lets the driver encode the model once.
func BenchmarkInsertRepoConvertOnly(b *testing.B) { benchInsert(b, events.On(events.BeforeConvert)) }
