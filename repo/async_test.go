package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/async"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// An async listener keeps every After* event of real operations, in the
// order they were published, though the repository reuses one Event per
// operation and the cursor its buffers.
func TestAsyncListenerKeepsEvents(t *testing.T) {
	var kept []*events.Event
	a := async.New(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		kept = append(kept, e)
		return nil
	}))
	bus := events.NewBus()
	bus.Register(a)
	plains, err := repo.New[*plain](bus, repo.WithDatabase(srv.Database(t)))
	require.NoError(t, err)

	var batch []*plain
	for i := range 30 {
		if i < 10 {
			require.NoError(t, plains.Insert(ctx, &plain{Name: fmt.Sprint("u", i), Age: i}))
		} else {
			batch = append(batch, &plain{Name: fmt.Sprint("u", i), Age: i})
		}
	}
	require.NoError(t, plains.InsertMany(ctx, batch))
	found, err := plains.Find(ctx, bson.D{})
	require.NoError(t, err)
	require.Len(t, found, 30)
	require.NoError(t, a.Close(ctx))

	var saves, loads, converts []string
	for _, e := range kept {
		name := e.Document.Lookup("name").StringValue()
		switch e.Type {
		case events.AfterSave:
			saves = append(saves, name)
			if e.Op == events.OpInsertMany {
				assert.Len(t, e.Batch, 20)
			}
		case events.AfterLoad:
			loads = append(loads, name)
		case events.AfterConvert:
			converts = append(converts, name)
			assert.Equal(t, name, e.Model.(*plain).Name)
		}
	}
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprint("u", i))
	}
	assert.Equal(t, want, saves, "AfterSave, in publish order")
	assert.ElementsMatch(t, want, loads, "AfterLoad")
	assert.Equal(t, loads, converts, "AfterConvert follows each AfterLoad")
}
