package serverinfo_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/internal/serverinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestOneConnection reads the pool size of real clients: one connection
// for maxPoolSize 1, not for the default pool or a larger one.
func TestOneConnection(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		opts *options.ClientOptions
		want bool
	}{
		{options.Client(), false},
		{options.Client().SetMaxPoolSize(1), true},
		{options.Client().SetMaxPoolSize(2), false},
		{options.Client().SetMaxPoolSize(0), false},
	} {
		client, err := mongo.Connect(ctx, options.Client().ApplyURI("mongodb://127.0.0.1:1/?connect=direct"), c.opts)
		require.NoError(t, err)
		assert.Equal(t, c.want, serverinfo.OneConnection(client), "maxPoolSize %v", c.opts.MaxPoolSize)
		require.NoError(t, client.Disconnect(ctx))
	}
	assert.False(t, serverinfo.OneConnection(nil))
}
