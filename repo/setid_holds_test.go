package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

type gen[T any] struct {
	mgm.DefaultModel `bson:",inline"`
	V                T `bson:"v"`
}

func (g *gen[T]) CollectionName() string { return "setid_gens" }

type setidPlain struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

func (p *setidPlain) CollectionName() string { return "setid_plains" }

// TestConcurrentFirstInserts: many goroutines make repositories of the
// same types and insert at once; every ID is distinct and stored once.
func TestConcurrentFirstInserts(t *testing.T) {
	db := srv.PooledDatabase(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	ids := make(chan primitive.ObjectID, 1024)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bus := events.NewBus()
			if g%2 == 0 {
				anyListener(bus)
			}
			r, err := repo.New[*setidPlain](bus, repo.WithDatabase(db))
			if err != nil {
				errs <- err
				return
			}
			gr, err := repo.New[*gen[float64]](bus, repo.WithDatabase(db))
			if err != nil {
				errs <- err
				return
			}
			for i := range 5 {
				m := &setidPlain{Name: fmt.Sprint(g, "-", i)}
				if err := r.Insert(ctx, m); err != nil {
					errs <- err
				}
				ids <- m.ID
				ms := []*setidPlain{{Name: "m"}, {Name: "m"}}
				if err := r.InsertMany(ctx, ms); err != nil {
					errs <- err
				}
				ids <- ms[0].ID
				ids <- ms[1].ID
				if err := gr.Insert(ctx, &gen[float64]{V: float64(i)}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(ids)
	for err := range errs {
		t.Error(err)
	}
	seen := map[primitive.ObjectID]bool{}
	for id := range ids {
		require.False(t, id.IsZero())
		require.False(t, seen[id], "duplicate %v", id)
		seen[id] = true
		assert.Equal(t, int64(1), count(t, db, "setid_plains", bson.M{"_id": id}))
	}
	assert.Equal(t, int64(len(seen)), count(t, db, "setid_plains", nil))
	assert.Equal(t, int64(80), count(t, db, "setid_gens", nil))
}

// TestFailurePaths: every failing path leaves unwritten models at zero and written ones
// with their stored IDs.
func TestFailurePaths(t *testing.T) {
	bus, r, db := setup[*setidPlain](t, nil)
	anyListener(bus)
	stored := &setidPlain{Name: "stored"}
	require.NoError(t, r.Insert(ctx, stored))

	// InsertMany partial failure.
	dup := &setidPlain{Name: "dup"}
	dup.ID = stored.ID
	ms := []*setidPlain{{Name: "a"}, {Name: "b"}, dup, {Name: "d"}}
	err := r.InsertMany(ctx, ms)
	require.True(t, mongo.IsDuplicateKeyError(err), "%v", err)
	for _, m := range ms[:2] {
		assert.Equal(t, int64(1), count(t, db, "setid_plains", bson.M{"_id": m.ID, "name": m.Name}))
	}
	assert.Equal(t, stored.ID, dup.ID)
	assert.True(t, ms[3].ID.IsZero())
	assert.Equal(t, int64(3), count(t, db, "setid_plains", nil))

	// BulkWrite, ordered (the default): stops at the duplicate.
	a, b := &setidPlain{Name: "ba"}, &setidPlain{Name: "bb"}
	d2 := &setidPlain{Name: "bdup"}
	d2.ID = stored.ID
	_, err = r.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(a),
		mongo.NewInsertOneModel().SetDocument(d2),
		mongo.NewInsertOneModel().SetDocument(b),
	}, nil)
	require.Error(t, err)
	assert.Equal(t, int64(1), count(t, db, "setid_plains", bson.M{"_id": a.ID, "name": a.Name}))
	assert.True(t, b.ID.IsZero(), "not reached")
	assert.Equal(t, stored.ID, d2.ID)
	assert.Equal(t, int64(4), count(t, db, "setid_plains", nil))
	// Unordered: the others are written.
	a, b = &setidPlain{Name: "ua"}, &setidPlain{Name: "ub"}
	_, err = r.BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(a),
		mongo.NewInsertOneModel().SetDocument(d2),
		mongo.NewInsertOneModel().SetDocument(b),
	}, options.BulkWrite().SetOrdered(false))
	require.Error(t, err)
	for _, m := range []*setidPlain{a, b} {
		assert.Equal(t, int64(1), count(t, db, "setid_plains", bson.M{"_id": m.ID, "name": m.Name}), m.Name)
	}

	// A listener failing at BeforeSave: Insert, Save of a new model, InsertMany.
	bus2, r2, db2 := setup[*setidPlain](t, nil)
	boom := errors.New("boom")
	bus2.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Index == 1 || e.Batch == nil {
			return boom
		}
		return nil
	}), events.On(events.BeforeSave))
	m := &setidPlain{Name: "x"}
	require.ErrorIs(t, r2.Insert(ctx, m), boom)
	assert.True(t, m.ID.IsZero())
	require.ErrorIs(t, r2.Save(ctx, m), boom)
	assert.True(t, m.ID.IsZero())
	ms = []*setidPlain{{}, {}, {}}
	require.ErrorIs(t, r2.InsertMany(ctx, ms), boom)
	for _, m := range ms {
		assert.True(t, m.ID.IsZero())
	}
	assert.Zero(t, count(t, db2, "setid_plains", nil))
}
