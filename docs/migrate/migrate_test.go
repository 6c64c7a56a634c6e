// Package migrate is the test of the migration guide (docs/driver-v2.md):
// the guide's model on both lines of the library, on one database.
package migrate

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	v1 "github.com/mgmevents/mgmevents/docs/migrate/v1"
	v2 "github.com/mgmevents/mgmevents/docs/migrate/v2"
	events1 "github.com/mgmevents/mgmevents/events"
	autokeys1 "github.com/mgmevents/mgmevents/listeners/autokeys"
	model1 "github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mongotest"
	events2 "github.com/mgmevents/mgmevents/mongov2/events"
	autokeys2 "github.com/mgmevents/mgmevents/mongov2/listeners/autokeys"
	model2 "github.com/mgmevents/mgmevents/mongov2/model"
	repo2 "github.com/mgmevents/mgmevents/mongov2/repo"
	repo1 "github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bson1 "go.mongodb.org/mongo-driver/bson"
	mongo1 "go.mongodb.org/mongo-driver/mongo"
	options1 "go.mongodb.org/mongo-driver/mongo/options"
	mongo2 "go.mongodb.org/mongo-driver/v2/mongo"
	options2 "go.mongodb.org/mongo-driver/v2/mongo/options"
)

// lines are the guide's repository on each line, on one database.
type lines struct {
	r1  *repo1.Repository[*v1.Order]
	r2  *repo2.Repository[*v2.Order]
	db1 *mongo1.Database
}

func open(t *testing.T) lines {
	t.Helper()
	ctx := context.Background()
	srv := mongotest.Start(t)
	name := mongotest.UniqueName("migrate")
	c1, err := mongo1.Connect(ctx, options1.Client().ApplyURI(srv.URI).SetRegistry(model1.Registry()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c1.Disconnect(context.Background()) })
	c2, err := mongo2.Connect(options2.Client().ApplyURI(srv.URI).SetRegistry(model2.Registry()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Disconnect(context.Background()) })
	db1, db2 := c1.Database(name), c2.Database(name)

	bus1, bus2 := events1.NewBus(), events2.NewBus()
	keys1, err := autokeys1.New(db1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = keys1.Close(context.Background()) })
	bus1.Register(keys1, events1.Order(-100))
	keys2, err := autokeys2.New(db2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = keys2.Close(context.Background()) })
	bus2.Register(keys2, events2.Order(-100))

	r1, err := repo1.New[*v1.Order](bus1, repo1.WithDatabase(db1))
	require.NoError(t, err)
	r2, err := repo2.New[*v2.Order](bus2, repo2.WithDatabase(db2))
	require.NoError(t, err)
	return lines{r1: r1, r2: r2, db1: db1}
}

// TestDocumentsCrossLines: what the v1 line writes the v2 line reads, and
// the other way round; both run the model's hooks, and their numbers
// come from one counter, so none repeats.
func TestDocumentsCrossLines(t *testing.T) {
	ctx := context.Background()
	l := open(t)

	a := &v1.Order{Customer: "Ada Lovelace"}
	require.NoError(t, l.r1.Insert(ctx, a))
	got2, err := l.r2.FindByID(ctx, a.ID.Hex())
	require.NoError(t, err)
	assert.Equal(t, a.No, got2.No)
	assert.Equal(t, "ada-lovelace", got2.Slug, "Creating ran on the v1 line")
	assert.Equal(t, 1, got2.Saves, "Saving ran once")
	assert.WithinDuration(t, a.CreatedAt, got2.CreatedAt, time.Millisecond)
	assert.WithinDuration(t, a.UpdatedAt, got2.UpdatedAt, time.Millisecond)

	b := &v2.Order{Customer: "Grace Hopper"}
	require.NoError(t, l.r2.Insert(ctx, b))
	assert.Equal(t, "grace-hopper", b.Slug, "Creating ran on the v2 line")
	assert.NotZero(t, b.No)
	assert.NotEqual(t, a.No, b.No, "the lines share the counter")
	got1, err := l.r1.FindByID(ctx, b.ID.Hex())
	require.NoError(t, err)
	assert.Equal(t, b.No, got1.No)
	assert.Equal(t, "Grace Hopper", got1.Customer)

	// The v1 line saves what the v2 line wrote; the v2 line sees it.
	require.NoError(t, l.r1.Save(ctx, got1))
	again, err := l.r2.FindByID(ctx, b.ID.Hex())
	require.NoError(t, err)
	assert.Equal(t, 2, again.Saves)
	assert.False(t, again.UpdatedAt.Before(b.UpdatedAt))

	// Stored by either line, a document has the same keys.
	keys := func(id any) []string {
		var raw bson1.Raw
		require.NoError(t, l.db1.Collection("orders").FindOne(ctx, bson1.D{{Key: "_id", Value: id}}).Decode(&raw))
		els, err := raw.Elements()
		require.NoError(t, err)
		var ks []string
		for _, e := range els {
			ks = append(ks, e.Key())
		}
		slices.Sort(ks)
		return ks
	}
	want := []string{"_id", "created_at", "customer", "no", "saves", "slug", "updated_at"}
	assert.Equal(t, want, keys(a.ID))
	assert.Equal(t, want, keys(got1.ID))
}

// TestModelMovedByImportsOnly: the guide's v2 model is its v1 model with
// the imports changed (and the package's name and doc).
func TestModelMovedByImportsOnly(t *testing.T) {
	body := func(path string) []byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		i := bytes.Index(b, []byte("\n)\n")) // the end of the import block
		require.Positive(t, i, path)
		return b[i:]
	}
	assert.Equal(t, string(body("v1/order.go")), string(body("v2/order.go")))
}
