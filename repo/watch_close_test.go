package repo_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// TestChangeStreamCloseKeepsEvent: a ChangeStream closed from another
// goroutine, while a Next decodes a change, does not give its event back
// to the pool: the Next publishes AfterLoad on the stream's own Watch
// event, before and after the Close (under -race, a Close that cleared
// the event would also be reported as a race with the Next).
func TestChangeStreamCloseKeepsEvent(t *testing.T) {
	bus := events.NewBus()
	var mu sync.Mutex
	var seen []string
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e.Op.String()+" "+e.Collection)
		return nil
	}), events.On(events.AfterLoad))
	people, err := repo.New[*plain](bus, repo.WithDatabase(srv.PooledDatabase(t)))
	require.NoError(t, err)
	change := bson.Raw(bsonDoc(t, bson.D{{Key: "operationType", Value: "insert"},
		{Key: "fullDocument", Value: bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "name", Value: "ann"}}}}))

	s, err := people.StreamWithout(ctx, nil)
	require.NoError(t, err)
	const n = 50
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			if !s.NextOf(ctx, change) {
				return
			}
		}
	}()
	require.NoError(t, s.Close(ctx))
	<-done
	require.True(t, s.NextOf(ctx, change), "a Next after Close: %v", s.Err())
	assert.Equal(t, "ann", s.Model().Name)
	require.Len(t, seen, n+1)
	want := events.OpWatch.String() + " " + people.Collection().Name()
	for i, got := range seen {
		require.Equal(t, want, got, "AfterLoad %d", i)
	}
}
