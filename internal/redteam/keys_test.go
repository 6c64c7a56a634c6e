package redteam_test

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ParseKeys' and New's errors name the key's position, never a text that
// may be its secret: an entry written SECRET:ID (the two parts swapped)
// puts the secret in the ID position.
func TestDefendParseKeysErrorQuotesSecret(t *testing.T) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	secret := base64.StdEncoding.EncodeToString(b)
	_, err := encryption.ParseKeys(secret + ":2026-11")
	require.ErrorIs(t, err, encryption.ErrKey)
	assert.False(t, strings.Contains(err.Error(), secret), "the secret is in the error: %v", err)
	assert.ErrorContains(t, err, "key 0")
	_, err = encryption.New(encryption.Keys{{ID: secret, Secret: []byte("short")}})
	require.ErrorIs(t, err, encryption.ErrKey)
	assert.False(t, strings.Contains(err.Error(), secret), "the secret is in the error: %v", err)
	assert.ErrorContains(t, err, "key 0")
	long := make([]byte, 32)
	_, err = encryption.New(encryption.Keys{{ID: secret, Secret: long}, {ID: secret, Secret: long}})
	require.ErrorIs(t, err, encryption.ErrKey)
	assert.False(t, strings.Contains(err.Error(), secret), "the secret is in the error: %v", err)
	assert.ErrorContains(t, err, "key 1")
}
