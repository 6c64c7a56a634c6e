package encryption_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestEncryptionLoggingShowsNoPlaintext: Logging with WithDocuments runs
// before Encryption on Before* events and after it on AfterLoad, so it
// sees plaintext; it must show none of it.
func TestEncryptionLoggingShowsNoPlaintext(t *testing.T) {
	db := srv.Database(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bus, _ := encBus(t, encryption.Keys{{ID: "k", Secret: secret(t)}})
	bus.Register(listeners.NewLogging(logger, listeners.WithDocuments()))
	patients, err := repo.New[*Patient](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	p := &Patient{Email: "secret.email@example.com", Notes: "secret notes", Ward: "w1"}
	require.NoError(t, patients.Insert(ctx, p))
	_, err = patients.FindOne(ctx, bson.M{"email": "secret.email@example.com"})
	require.NoError(t, err)
	_, err = patients.UpdateOne(ctx, bson.M{"email": "secret.email@example.com"}, bson.M{"$set": bson.M{"notes": "secret notes 2"}})
	require.NoError(t, err)
	_, err = patients.UpdateOne(ctx, bson.M{"email": "secret.upsert@example.com"}, bson.M{"$set": bson.M{"ward": "w2"}}, upsert())
	require.NoError(t, err)
	require.NotEmpty(t, buf.String())
	assert.Contains(t, buf.String(), "w1", "other fields are logged")
	assert.Contains(t, buf.String(), "[encrypted]")
	assert.NotContains(t, buf.String(), "secret")
}
