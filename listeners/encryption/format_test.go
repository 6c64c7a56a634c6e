package encryption_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// TestEncryptionFormatAsDocumented decrypts a stored value and recomputes
// its blind index from docs/encryption.md's "Stored format" alone: key
// derivation, byte layout, additional authenticated data and HMAC input. It fails when the
// code and the documentation part.
func TestEncryptionFormatAsDocumented(t *testing.T) {
	db := srv.Database(t)
	s := secret(t)
	patients, _ := encrypted[*Patient](t, db, encryption.Keys{{ID: "2026-11", Secret: s}})
	p := &Patient{Email: "doc@example.com"}
	require.NoError(t, patients.Insert(ctx, p))
	raw := rawDocs(t, db, "patients")[0]
	data := payload(t, raw, "email")

	require.Equal(t, byte(0x01), data[0], "version")
	require.Equal(t, byte(0x01), data[1], "bound")
	n := int(data[2])
	require.Equal(t, "2026-11", string(data[3:3+n]))
	require.Equal(t, byte(bson.TypeString), data[3+n])
	nonce, ct := data[4+n:16+n], data[16+n:]

	lp := func(dst, b []byte) []byte { return append(binary.LittleEndian.AppendUint32(dst, uint32(len(b))), b...) }
	id := raw.Lookup("_id")
	aad := append([]byte("mgmevents/v1 field\x00"), data[:4+n]...)
	aad = lp(aad, []byte("patients"))
	aad = lp(aad, []byte("email"))
	aad = lp(append(aad, byte(id.Type)), id.Value)

	key, err := hkdf.Key(sha256.New, s, []byte("mgmevents field encryption"), "mgmevents/v1 AES-256-GCM field encryption", 32)
	require.NoError(t, err)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	gcm, err := cipher.NewGCM(block)
	require.NoError(t, err)
	plain, err := gcm.Open(nil, nonce, ct, aad)
	require.NoError(t, err)
	assert.Equal(t, "doc@example.com", bson.RawValue{Type: bson.TypeString, Value: plain}.StringValue())
	assert.Len(t, data, 32+n+len(plain), "32+n+m bytes")

	ikey, err := hkdf.Key(sha256.New, s, []byte("mgmevents field encryption"), "mgmevents/v1 HMAC-SHA-256 blind index", 32)
	require.NoError(t, err)
	m := hmac.New(sha256.New, ikey)
	m.Write([]byte("mgmevents/v1 bidx\x00"))
	m.Write(lp(lp(nil, []byte("patients")), []byte("email")))
	m.Write([]byte{byte(bson.TypeString)})
	m.Write(plain)
	sub, idx := raw.Lookup("email_bidx").Binary()
	assert.Equal(t, byte(0), sub)
	assert.Equal(t, m.Sum(nil)[:16], idx)
}
