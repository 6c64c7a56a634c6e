package repo_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// plainName is a DTO of plain.
type plainName struct {
	Name string `bson:"name"`
}

// seen is one operation as an interceptor saw it.
type seen struct {
	op  events.Operation
	err error
	dur time.Duration
}

// opLog is an interceptor that handles no events and records every
// operation when it ends.
type opLog struct {
	mu  sync.Mutex
	ops []seen
	j   *journal // when set, "begin" and "end" go to it too
}

func (l *opLog) HandleEvent(context.Context, *events.Event) error { return nil }
func (l *opLog) EventTypes() []events.Type                        { return nil }

func (l *opLog) Intercept(ctx context.Context, o *events.Operation, next func(context.Context) error) error {
	if l.j != nil {
		l.j.add("begin " + o.Method)
	}
	start := time.Now()
	err := next(context.WithValue(ctx, traceKey{}, o.Method))
	if l.j != nil {
		l.j.add("end " + o.Method)
	}
	l.mu.Lock()
	l.ops = append(l.ops, seen{*o, err, time.Since(start)})
	l.mu.Unlock()
	return err
}

// take returns the operations seen since the last call.
func (l *opLog) take() []seen {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := l.ops
	l.ops = nil
	return ops
}

type traceKey struct{}
type vetoKey struct{}

var errVeto = errors.New("vetoed for the test")

// vetoing vetoes every Before* event under a context with vetoKey.
var vetoing = events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
	if e.Type.Before() && ctx.Value(vetoKey{}) != nil {
		return errVeto
	}
	return nil
})

// TestInterceptorSeesEveryMethod: each repository method runs inside the
// interceptor, which sees its name, collection, model, duration, error
// and counts, when it succeeds and when it fails: on the server, on a
// veto, on bad arguments, and when it finds nothing.
func TestInterceptorSeesEveryMethod(t *testing.T) {
	bus := events.NewBus()
	log := &opLog{}
	bus.Register(vetoing)
	bus.Register(log)
	db := srv.Database(t)
	r, err := repo.New[*plain](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	veto := context.WithValue(ctx, vetoKey{}, true)
	bad := bson.M{"$bad": 1} // the server refuses the filter
	missing := bson.M{"name": "nobody"}
	info := srv.Info()
	noStreams := info.FerretDB != "" || !(info.ReplicaSet || info.Sharded) // the server refuses Watch
	seed := &plain{Name: "a", Age: 1}
	require.NoError(t, r.Insert(ctx, seed))
	require.NoError(t, r.Insert(ctx, &plain{Name: "b", Age: 2}))
	log.take()

	type want struct {
		method                                              string
		op                                                  events.Op
		inserted, matched, modified, deleted, returned, ups int64
		err                                                 error // nil: any error, with fails
		fails                                               bool
	}
	cases := []struct {
		name string
		run  func() error
		want want
	}{
		{"Insert", func() error { return r.Insert(ctx, &plain{Name: "c"}) }, want{method: "Insert", op: events.OpInsert, inserted: 1}},
		{"Insert duplicate", func() error { return r.Insert(ctx, seed) }, want{method: "Insert", op: events.OpInsert, fails: true}},
		{"Save new", func() error { return r.Save(ctx, &plain{Name: "d"}) }, want{method: "Save", op: events.OpInsert, inserted: 1}},
		{"Save existing", func() error { seed.Age = 3; return r.Save(ctx, seed) }, want{method: "Save", op: events.OpReplace, matched: 1, modified: 1}},
		{"Save vetoed", func() error { return r.Save(veto, seed) }, want{method: "Save", op: events.OpReplace, err: errVeto, fails: true}},
		{"Update", func() error { seed.Age = 4; return r.Update(ctx, seed) }, want{method: "Update", op: events.OpUpdate, matched: 1, modified: 1}},
		{"Update missing", func() error { return r.Update(ctx, &plain{DefaultModel: newID()}) }, want{method: "Update", op: events.OpUpdate, err: repo.ErrNotFound, fails: true}},
		{"InsertMany", func() error { return r.InsertMany(ctx, []*plain{{Name: "e"}, {Name: "f"}}) }, want{method: "InsertMany", op: events.OpInsertMany, inserted: 2}},
		{"InsertMany part way", func() error { return r.InsertMany(ctx, []*plain{{Name: "g"}, seed}) }, want{method: "InsertMany", op: events.OpInsertMany, inserted: 1, fails: true}},
		{"FindByID", func() error { _, err := r.FindByID(ctx, seed.ID); return err }, want{method: "FindByID", op: events.OpFind, returned: 1}},
		{"FindByID missing", func() error { _, err := r.FindByID(ctx, newID().ID); return err }, want{method: "FindByID", op: events.OpFind, err: repo.ErrNotFound, fails: true}},
		{"FindOne", func() error { _, err := r.FindOne(ctx, bson.M{"name": "a"}); return err }, want{method: "FindOne", op: events.OpFind, returned: 1}},
		{"FindOne nothing", func() error { _, err := r.FindOne(ctx, missing); return err }, want{method: "FindOne", op: events.OpFind, err: repo.ErrNotFound, fails: true}},
		{"Find", func() error { _, err := r.Find(ctx, bson.M{"name": bson.M{"$in": bson.A{"a", "b"}}}); return err }, want{method: "Find", op: events.OpFind, returned: 2}},
		{"Find refused", func() error { _, err := r.Find(ctx, bad); return err }, want{method: "Find", op: events.OpFind, fails: true}},
		{"Iter", func() error {
			c, err := r.Iter(ctx, bson.D{})
			if err == nil {
				c.Close(ctx)
			}
			return err
		}, want{method: "Iter", op: events.OpFind}},
		{"Iter vetoed", func() error { _, err := r.Iter(veto, bson.D{}); return err }, want{method: "Iter", op: events.OpFind, err: errVeto, fails: true}},
		{"All", func() error {
			for _, err := range r.All(ctx, bson.M{"name": "b"}) {
				if err != nil {
					return err
				}
			}
			return nil
		}, want{method: "All", op: events.OpFind, returned: 1}},
		{"All refused", func() error {
			for _, err := range r.All(ctx, bad) {
				return err
			}
			return nil
		}, want{method: "All", op: events.OpFind, fails: true}},
		{"FindPage", func() error {
			_, err := r.FindPage(ctx, bson.M{"name": bson.M{"$in": bson.A{"a", "b"}}}, repo.PageRequest{Size: 1, Count: true})
			return err
		}, want{method: "FindPage", op: events.OpFind, returned: 1}},
		{"FindPage vetoed", func() error { _, err := r.FindPage(veto, bson.D{}, repo.PageRequest{Size: 1}); return err },
			want{method: "FindPage", op: events.OpFind, err: errVeto, fails: true}},
		{"FindAs", func() error { _, err := repo.FindAs[plainName](ctx, r, bson.M{"name": "a"}); return err },
			want{method: "FindAs", op: events.OpFind, returned: 1}},
		{"FindAs refused", func() error { _, err := repo.FindAs[plainName](ctx, r, bad); return err },
			want{method: "FindAs", op: events.OpFind, fails: true}},
		{"Count", func() error { _, err := r.Count(ctx, bson.D{}); return err }, want{method: "Count", op: events.OpCount}},
		{"Count vetoed", func() error { _, err := r.Count(veto, bson.D{}); return err }, want{method: "Count", op: events.OpCount, err: errVeto, fails: true}},
		{"Distinct", func() error { _, err := r.Distinct(ctx, "name", bson.M{"name": "a"}); return err }, want{method: "Distinct", op: events.OpDistinct, returned: 1}},
		{"Distinct without field", func() error { _, err := r.Distinct(ctx, "", nil); return err }, want{method: "Distinct", op: events.OpDistinct, err: repo.ErrInvalidArgument, fails: true}},
		{"Aggregate", func() error {
			var out []bson.M
			return r.Aggregate(ctx, bson.A{bson.M{"$match": bson.M{"name": "a"}}}, &out)
		}, want{method: "Aggregate", op: events.OpAggregate, returned: 1}},
		{"Aggregate refused", func() error {
			var out []bson.M
			return r.Aggregate(ctx, bson.A{bson.M{"$bad": 1}}, &out)
		}, want{method: "Aggregate", op: events.OpAggregate, fails: true}},
		{"UpdateOne", func() error {
			_, err := r.UpdateOne(ctx, bson.M{"name": "a"}, bson.M{"$set": bson.M{"age": 9}})
			return err
		}, want{method: "UpdateOne", op: events.OpUpdateOne, matched: 1, modified: 1}},
		{"UpdateOne upsert", func() error {
			_, err := r.UpdateOne(ctx, bson.M{"name": "u"}, bson.M{"$set": bson.M{"age": 9}}, options.Update().SetUpsert(true))
			return err
		}, want{method: "UpdateOne", op: events.OpUpdateOne, ups: 1}},
		{"UpdateOne without filter", func() error { _, err := r.UpdateOne(ctx, nil, bson.M{"$set": bson.M{"age": 9}}); return err },
			want{method: "UpdateOne", op: events.OpUpdateOne, err: repo.ErrInvalidArgument, fails: true}},
		{"UpdateMany", func() error {
			_, err := r.UpdateMany(ctx, bson.M{"name": bson.M{"$in": bson.A{"e", "f"}}}, bson.M{"$inc": bson.M{"age": 1}})
			return err
		}, want{method: "UpdateMany", op: events.OpUpdateMany, matched: 2, modified: 2}},
		{"UpdateMany refused", func() error { _, err := r.UpdateMany(ctx, bad, bson.M{"$inc": bson.M{"age": 1}}); return err },
			want{method: "UpdateMany", op: events.OpUpdateMany, fails: true}},
		{"FindOneAndUpdate", func() error {
			_, err := r.FindOneAndUpdate(ctx, bson.M{"name": "b"}, bson.M{"$set": bson.M{"age": 5}})
			return err
		}, want{method: "FindOneAndUpdate", op: events.OpFindOneAndUpdate, matched: 1, modified: 1, returned: 1}},
		{"FindOneAndUpdate nothing", func() error { _, err := r.FindOneAndUpdate(ctx, missing, bson.M{"$set": bson.M{"age": 5}}); return err },
			want{method: "FindOneAndUpdate", op: events.OpFindOneAndUpdate, err: repo.ErrNotFound, fails: true}},
		{"Delete", func() error {
			m, err := r.FindOne(ctx, bson.M{"name": "c"})
			require.NoError(t, err)
			log.take()
			return r.Delete(ctx, m)
		}, want{method: "Delete", op: events.OpDelete, deleted: 1}},
		{"Delete vetoed", func() error { return r.Delete(veto, seed) }, want{method: "Delete", op: events.OpDelete, err: errVeto, fails: true}},
		{"DeleteMany", func() error { _, err := r.DeleteMany(ctx, bson.M{"name": bson.M{"$in": bson.A{"e", "f"}}}); return err },
			want{method: "DeleteMany", op: events.OpDeleteMany, deleted: 2}},
		{"DeleteMany without filter", func() error { _, err := r.DeleteMany(ctx, nil); return err },
			want{method: "DeleteMany", op: events.OpDeleteMany, err: repo.ErrInvalidArgument, fails: true}},
		{"FindOneAndDelete", func() error { _, err := r.FindOneAndDelete(ctx, bson.M{"name": "d"}); return err },
			want{method: "FindOneAndDelete", op: events.OpFindOneAndDelete, deleted: 1, returned: 1}},
		{"FindOneAndDelete nothing", func() error { _, err := r.FindOneAndDelete(ctx, missing); return err },
			want{method: "FindOneAndDelete", op: events.OpFindOneAndDelete, err: repo.ErrNotFound, fails: true}},
		{"DeleteOne", func() error {
			require.NoError(t, r.Insert(ctx, &plain{Name: "h"}))
			log.take()
			_, err := r.DeleteOne(ctx, bson.M{"name": "h"})
			return err
		}, want{method: "DeleteOne", op: events.OpDeleteOne, deleted: 1}},
		{"DeleteOne without filter", func() error { _, err := r.DeleteOne(ctx, nil); return err },
			want{method: "DeleteOne", op: events.OpDeleteOne, err: repo.ErrInvalidArgument, fails: true}},
		{"ReplaceOne", func() error { _, err := r.ReplaceOne(ctx, bson.M{"name": "b"}, &plain{Name: "b", Age: 7}); return err },
			want{method: "ReplaceOne", op: events.OpReplaceOne, matched: 1, modified: 1}},
		{"ReplaceOne vetoed", func() error { _, err := r.ReplaceOne(veto, bson.M{"name": "b"}, &plain{Name: "b"}); return err },
			want{method: "ReplaceOne", op: events.OpReplaceOne, err: errVeto, fails: true}},
		{"FindOneAndReplace", func() error {
			_, err := r.FindOneAndReplace(ctx, bson.M{"name": "b"}, &plain{Name: "b", Age: 8})
			return err
		}, want{method: "FindOneAndReplace", op: events.OpFindOneAndReplace, matched: 1, modified: 1, returned: 1}},
		{"FindOneAndReplace nothing", func() error { _, err := r.FindOneAndReplace(ctx, missing, &plain{Name: "z"}); return err },
			want{method: "FindOneAndReplace", op: events.OpFindOneAndReplace, err: repo.ErrNotFound, fails: true}},
		{"BulkWrite", func() error {
			_, err := r.BulkWrite(ctx, []mongo.WriteModel{
				mongo.NewInsertOneModel().SetDocument(&plain{Name: "i"}),
				mongo.NewDeleteOneModel().SetFilter(bson.M{"name": "i"}),
			})
			return err
		}, want{method: "BulkWrite", inserted: 1, deleted: 1}},
		{"BulkWrite without models", func() error { _, err := r.BulkWrite(ctx, nil); return err },
			want{method: "BulkWrite", err: repo.ErrInvalidArgument, fails: true}},
		{"Watch", func() error {
			cs, err := r.Watch(ctx, mongo.Pipeline{})
			if err == nil {
				cs.Close(ctx)
			}
			return err
		}, want{method: "Watch", op: events.OpWatch, fails: noStreams}},
		{"Watch vetoed", func() error { _, err := r.Watch(veto, mongo.Pipeline{}); return err },
			want{method: "Watch", op: events.OpWatch, err: errVeto, fails: true}},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.want.method] = true
	}
	rt := reflect.TypeFor[*repo.Repository[*plain]]()
	for i := range rt.NumMethod() {
		m := rt.Method(i)
		if m.Type.NumIn() > 1 && m.Type.In(1) == reflect.TypeFor[context.Context]() && !strings.HasSuffix(m.Name, "Body") && m.Name != "WatchChanges" && m.Name != "StreamWithout" { // Body, WatchChanges, StreamWithout: export_test.go
			assert.True(t, covered[m.Name], "%s takes a context but has no case here: wrap it (see repo/intercept.go) and add its cases", m.Name)
		}
	}
	for _, c := range cases {
		err := c.run()
		ops := log.take()
		require.Len(t, ops, 1, c.name)
		got, w := ops[0], c.want
		assert.Equal(t, w.method, got.op.Method, c.name)
		assert.Equal(t, w.op, got.op.Op, c.name)
		assert.Equal(t, "plains", got.op.Collection, c.name)
		assert.Equal(t, db.Name(), got.op.Database, c.name)
		assert.Equal(t, "*repo_test.plain", got.op.ModelType.String(), c.name)
		assert.Positive(t, got.dur, c.name)
		assert.Equal(t, [6]int64{w.inserted, w.matched, w.modified, w.deleted, w.returned, w.ups},
			[6]int64{got.op.Inserted, got.op.Matched, got.op.Modified, got.op.Deleted, got.op.Returned, got.op.Upserted}, c.name)
		assert.Equal(t, err, got.err, "%s: the interceptor sees the error the caller gets", c.name)
		if !w.fails {
			assert.NoError(t, err, c.name)
			continue
		}
		assert.Error(t, err, c.name)
		if w.err != nil {
			assert.ErrorIs(t, err, w.err, c.name)
		}
		if errors.Is(err, errVeto) {
			var le *events.ListenerError
			require.ErrorAs(t, err, &le, c.name)
			assert.IsType(t, vetoing, le.Listener, "%s: the veto names the listener", c.name)
		}
	}
}

// TestInterceptorWrapsHooksEventsAndDriver: mgm's hooks, the events and
// the policies run inside the interceptor, and what it puts into the
// context reaches the listeners, the policies and the driver's commands.
func TestInterceptorWrapsHooksEventsAndDriver(t *testing.T) {
	var mu sync.Mutex
	commands := map[string]any{}
	monitor := &event.CommandMonitor{Started: func(ctx context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		defer mu.Unlock()
		commands[e.CommandName] = ctx.Value(traceKey{})
	}}
	db := srv.Database(t, options.Client().SetMonitor(monitor))
	j := &journal{}
	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		j.add(e.Type.String() + " in " + ctx.Value(traceKey{}).(string))
		return nil
	}))
	bus.Register(events.ListenerFunc(func(ctx context.Context, e *events.Event) error {
		j.add("policy " + e.Type.String() + " in " + ctx.Value(traceKey{}).(string))
		return nil
	}), events.AsPolicy(), events.On(events.BeforeSave))
	bus.Register(&opLog{j: j})
	r, err := repo.New[*hooked](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	require.NoError(t, r.Insert(ctx, &hooked{Name: "x", j: j}))
	assert.Equal(t, []string{"begin Insert", "Creating", "Saving", "BeforeConvert in Insert", "BeforeSave in Insert",
		"policy BeforeSave in Insert", "AfterSave in Insert", "Created", "Saved", "end Insert"}, j.lines)
	_, err = r.Count(ctx, bson.D{})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "Insert", commands["insert"], "the insert command ran under the interceptor's context")
	assert.Equal(t, "Count", commands["aggregate"], "so did Count's (an aggregate)")
}

// TestNoInterceptorCostsNothing: without an interceptor for the model, a
// repository method allocates what its body alone does. The operations are
// vetoed before the server, whose allocations (it runs in this process)
// would blur the count; the real ones are logged.
func TestNoInterceptorCostsNothing(t *testing.T) {
	bus := events.NewBus()
	bus.Register(vetoing)
	bus.Register(&opLog{}, events.ForModel[*hooked]()) // another model's
	r, err := repo.New[*plain](bus, repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)
	veto := context.WithValue(ctx, vetoKey{}, true)
	m := &plain{Name: "x"}
	insert := leastAllocs(func() { _ = r.Insert(veto, m) })
	body := leastAllocs(func() { _ = r.InsertBody(veto, m) })
	assert.Equal(t, body, insert, "Insert")
	find := leastAllocs(func() { _, _ = r.FindOne(veto, bson.D{}) })
	body = leastAllocs(func() { _, _ = r.FindOneBody(veto, bson.D{}) })
	assert.Equal(t, body, find, "FindOne")

	insert = testing.AllocsPerRun(50, func() { require.NoError(t, r.Insert(ctx, &plain{Name: "x"})) })
	body = testing.AllocsPerRun(50, func() { require.NoError(t, r.InsertBody(ctx, &plain{Name: "x"})) })
	find = testing.AllocsPerRun(50, func() { _, _ = r.FindOne(ctx, bson.M{"name": "x"}) })
	findBody := testing.AllocsPerRun(50, func() { _, _ = r.FindOneBody(ctx, bson.M{"name": "x"}) })
	t.Logf("with the server: Insert %.0f allocs, its body %.0f; FindOne %.0f, its body %.0f", insert, body, find, findBody)
}

// leastAllocs returns the fewest allocations per call of f in three runs
// of testing.AllocsPerRun: it counts every allocation in the process, and
// the clients and the server of other tests allocate now and then in the
// background, which only ever adds.
func leastAllocs(f func()) float64 {
	least := testing.AllocsPerRun(100, f)
	for range 2 {
		least = min(least, testing.AllocsPerRun(100, f))
	}
	return least
}

// newID returns a model base with an ID no document has.
func newID() mgm.DefaultModel {
	return mgm.DefaultModel{IDField: mgm.IDField{ID: primitive.NewObjectID()}}
}
