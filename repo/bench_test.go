package repo_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
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

// benchInsert times repo.Insert with n no-op listeners registered with
// opts.
func benchInsert(b *testing.B, n int, opts ...events.Option) {
	bus := events.NewBus()
	for range n {
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

// BenchmarkInsertRepo has no listeners: it costs what mgm's Create costs.
func BenchmarkInsertRepo(b *testing.B) { benchInsert(b, 0) }

// BenchmarkInsertRepo3Listeners has listeners on every event, so the
// repository encodes the document for them.
func BenchmarkInsertRepo3Listeners(b *testing.B) { benchInsert(b, 3) }

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
func BenchmarkInsertRepoConvertOnly(b *testing.B) { benchInsert(b, 3, events.On(events.BeforeConvert)) }

// seedPlains inserts n plain documents into coll and returns them with
// their IDs.
func seedPlains(b *testing.B, coll *mongo.Collection, n int) []*plain {
	ps := make([]*plain, n)
	for i := range ps {
		ps[i] = &plain{Name: "bench", Age: i}
		ps[i].SetID(primitive.NewObjectID())
		if _, err := coll.InsertOne(ctx, ps[i]); err != nil {
			b.Fatal(err)
		}
	}
	return ps
}

// BenchmarkUpdateRaw is the raw twin of BenchmarkUpdateRepo: UpdateOne
// $set of the model's fields, updated_at included.
func BenchmarkUpdateRaw(b *testing.B) {
	coll := srv.Database(b).Collection("plains")
	ps := seedPlains(b, coll, 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := ps[i%len(ps)]
		p.Age, p.UpdatedAt = i, time.Now().UTC()
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: p.ID}}, bson.D{{Key: "$set", Value: p}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdateRepo(b *testing.B) {
	r, err := repo.New[*plain](events.NewBus(), repo.WithDatabase(srv.Database(b)))
	if err != nil {
		b.Fatal(err)
	}
	ps := seedPlains(b, r.Collection().Collection, 100)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := ps[i%len(ps)]
		p.Age = i
		if err := r.Update(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFind1000Raw is the raw twin of BenchmarkFind1000Repo: Find and
// cursor.All of 1000 documents.
func BenchmarkFind1000Raw(b *testing.B) {
	coll := srv.Database(b).Collection("plains")
	seedPlains(b, coll, 1000)
	b.ReportAllocs()
	for b.Loop() {
		cur, err := coll.Find(ctx, bson.D{})
		if err != nil {
			b.Fatal(err)
		}
		var ps []*plain
		if err := cur.All(ctx, &ps); err != nil || len(ps) != 1000 {
			b.Fatal(len(ps), err)
		}
	}
}

// BenchmarkFind1000Repo reads 1000 documents with one AfterConvert
// listener registered.
func BenchmarkFind1000Repo(b *testing.B) {
	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.On(events.AfterConvert))
	r, err := repo.New[*plain](bus, repo.WithDatabase(srv.Database(b)))
	if err != nil {
		b.Fatal(err)
	}
	seedPlains(b, r.Collection().Collection, 1000)
	b.ReportAllocs()
	for b.Loop() {
		ps, err := r.Find(ctx, bson.D{})
		if err != nil || len(ps) != 1000 {
			b.Fatal(len(ps), err)
		}
	}
}

// BenchmarkSaveVersioned saves a stored auto:"version" model; on the
// embedded server each save claims its version first.
func BenchmarkSaveVersioned(b *testing.B) {
	r, err := repo.New[*account](events.NewBus(), repo.WithDatabase(srv.Database(b)))
	if err != nil {
		b.Fatal(err)
	}
	a := &account{Balance: 1}
	if err := r.Insert(ctx, a); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Balance = i
		if err := r.Save(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplaceRaw is the raw twin of BenchmarkSaveVersioned.
func BenchmarkReplaceRaw(b *testing.B) {
	coll := srv.Database(b).Collection("accounts")
	a := &account{Balance: 1, Version: 1}
	a.SetID(primitive.NewObjectID())
	if _, err := coll.InsertOne(ctx, a); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a.Balance, a.Version, a.UpdatedAt = i, a.Version+1, time.Now().UTC()
		if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: a.ID}}, a); err != nil {
			b.Fatal(err)
		}
	}
}

// The parallel insert benchmarks run 8 goroutines on 2 cores (4 per
// GOMAXPROCS).
func BenchmarkInsertParallelRaw(b *testing.B) {
	coll := srv.Database(b).Collection("plains")
	b.ReportAllocs()
	b.SetParallelism(8 / min(8, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := coll.InsertOne(ctx, &plain{Name: "bench"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkInsertParallelRepo(b *testing.B) {
	r, err := repo.New[*plain](events.NewBus(), repo.WithDatabase(srv.Database(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(8 / min(8, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := r.Insert(ctx, &plain{Name: "bench"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
