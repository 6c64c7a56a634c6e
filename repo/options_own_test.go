package repo_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// sentLog records the commands a client sends, by name.
type sentLog struct {
	mu   sync.Mutex
	cmds map[string][]bson.Raw
}

func (l *sentLog) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cmds[e.CommandName] = append(l.cmds[e.CommandName], append(bson.Raw(nil), e.Command...))
	}})
}

func (l *sentLog) sent(name string) []bson.Raw {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cmds[name]
}

// changer registers on bus a listener of t for *plain that runs change.
func changer(bus *events.Bus, t events.Type, change func()) {
	bus.Register(events.ListenerFunc(func(context.Context, *events.Event) error {
		change()
		return nil
	}), events.On(t), events.ForType(reflect.TypeFor[*plain]()))
}

// TestOptionsChangedAfterTheChecksAreNotSent: the repository checks and
// describes its own copy of the caller's options, and sends that copy, so
// a listener (or a goroutine of the caller) that changes the caller's
// option structs, or what they point to, after the repository read them
// changes nothing that is sent: an update that was no upsert does not
// insert, a collation or raw command fields set late do not reach the
// server.
func TestOptionsChangedAfterTheChecksAreNotSent(t *testing.T) {
	setup := func(t *testing.T) (*events.Bus, *repo.Repository[*plain], *mongo.Database, *sentLog) {
		log := &sentLog{cmds: map[string][]bson.Raw{}}
		db := srv.Database(t, log.monitor())
		bus := events.NewBus()
		plains, err := repo.New[*plain](bus, repo.WithDatabase(db))
		require.NoError(t, err)
		return bus, plains, db, log
	}
	noneStored := func(t *testing.T, db *mongo.Database) {
		assert.Empty(t, mongotest.Docs(t, db.Collection("plains"), bson.D{}), "an update that was no upsert inserted a document")
	}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 1}}}}
	t.Run("UpdateOne Upsert", func(t *testing.T) {
		bus, plains, db, _ := setup(t)
		no := false
		changer(bus, events.BeforeUpdate, func() { no = true })
		_, err := plains.UpdateOne(ctx, bson.D{{Key: "name", Value: "flip"}}, set, &options.UpdateOptions{Upsert: &no})
		require.NoError(t, err)
		noneStored(t, db)
	})
	t.Run("FindOneAndUpdate Upsert", func(t *testing.T) {
		bus, plains, db, _ := setup(t)
		no := false
		changer(bus, events.BeforeUpdate, func() { no = true })
		_, err := plains.FindOneAndUpdate(ctx, bson.D{{Key: "name", Value: "flip"}}, set, &options.FindOneAndUpdateOptions{Upsert: &no})
		require.ErrorIs(t, err, repo.ErrNotFound)
		noneStored(t, db)
	})
	t.Run("BulkWrite Upsert", func(t *testing.T) {
		bus, plains, db, _ := setup(t)
		no := false
		changer(bus, events.BeforeUpdate, func() { no = true })
		m := mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "name", Value: "flip"}}).SetUpdate(set)
		m.Upsert = &no
		_, err := plains.BulkWrite(ctx, []mongo.WriteModel{m})
		require.NoError(t, err)
		noneStored(t, db)
	})
	t.Run("Find Collation", func(t *testing.T) {
		bus, plains, _, log := setup(t)
		opts := options.Find()
		changer(bus, events.BeforeQuery, func() { opts.Collation = &options.Collation{Locale: "en", Strength: 2} })
		_, err := plains.Find(ctx, bson.D{}, opts)
		require.NoError(t, err)
		require.Len(t, log.sent("find"), 1)
		_, err = log.sent("find")[0].LookupErr("collation")
		assert.Error(t, err, "a find was sent with a collation no listener saw")
	})
	t.Run("Aggregate Custom", func(t *testing.T) {
		for name, custom := range map[string]bson.M{
			"collation": {"collation": bson.M{"locale": "en", "strength": 2}},
			"pipeline":  {"pipeline": bson.A{bson.D{{Key: "$limit", Value: 1}}}},
		} {
			bus, plains, _, log := setup(t)
			opts := options.Aggregate()
			changer(bus, events.BeforeQuery, func() { opts.Custom = custom })
			var out []bson.M
			require.NoError(t, plains.Aggregate(ctx, []bson.D{}, &out, opts), name)
			require.Len(t, log.sent("aggregate"), 1, name)
			sent := log.sent("aggregate")[0]
			_, err := sent.LookupErr("collation")
			assert.Error(t, err, "%s: an aggregate was sent with raw fields no listener saw: %v", name, sent)
			stages, err := sent.Lookup("pipeline").Array().Values()
			require.NoError(t, err)
			assert.Empty(t, stages, "%s: an aggregate was sent with raw fields no listener saw: %v", name, sent)
		}
	})
}
