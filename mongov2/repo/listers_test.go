// Written by hand: a test of the v2 line alone, whose options are Listers.

package repo_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/mongov2/events"
	"github.com/mgmevents/mgmevents/mongov2/mgm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

type listed struct {
	mgm.DefaultModel `bson:",inline"`
	N                int `bson:"n"`
}

// twoFaced answers its first List with a limit of 1 and every later one
// with no limit.
type twoFaced struct{ calls int }

func (l *twoFaced) List() []func(*options.FindOptions) error {
	l.calls++
	limit := int64(1)
	if l.calls > 1 {
		limit = 0
	}
	return []func(*options.FindOptions) error{func(o *options.FindOptions) error {
		o.Limit = &limit
		return nil
	}}
}

// TestListersAreReadOnce: a repository reads a caller's Lister once, and
// what its listeners see of the options is what the server is sent, even
// from a Lister that answers differently the next time.
func TestListersAreReadOnce(t *testing.T) {
	bus, r, _ := setup[*listed](t, nil)
	var seen []any
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		if e.Type == events.BeforeQuery {
			seen = append(seen, e.Sort)
		}
		return nil
	}))
	for i := range 3 {
		require.NoError(t, r.Insert(ctx, &listed{N: i}))
	}
	l := &twoFaced{}
	got, err := r.Find(ctx, bson.D{}, l, options.Find().SetSort(bson.D{{Key: "n", Value: 1}}))
	require.NoError(t, err)
	assert.Equal(t, 1, l.calls, "the Lister is read once")
	assert.Len(t, got, 1, "the server is sent the limit the Lister gave first")
	assert.Len(t, seen, 1)
}
