package encryption

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// MinSecretLen is the shortest secret New accepts: 32 bytes, the
// strength of the AES-256 keys derived from it.
const MinSecretLen = 32

// Key is one secret of the key ring, with the ID stored in every value it
// encrypts so that reads find it again. Secret must be at least
// MinSecretLen bytes of uniform randomness (32 bytes from crypto/rand,
// base64-encoded into an environment variable, say), never a password.
//
// A Key prints redacted with fmt, slog and encoding/json: the secret never
// reaches a log by accident.
type Key struct {
	ID     string
	Secret []byte
}

// Keys is the key ring. The first key is the current one: writes encrypt
// with it. Reads accept every key in the ring.
type Keys []Key

// String returns the key's ID and the length of its secret, never the
// secret.
func (k Key) String() string {
	return fmt.Sprintf("Key{ID: %q, Secret: [%d bytes redacted]}", k.ID, len(k.Secret))
}

// GoString is String, so that %#v redacts too.
func (k Key) GoString() string { return k.String() }

// Format prints String for every verb, so that no verb (%x, %d, %+v)
// prints the secret.
func (k Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// LogValue logs the ID only.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", k.ID), slog.String("secret", "[redacted]"))
}

// MarshalJSON encodes the ID only.
func (k Key) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"ID":%q,"Secret":"[redacted]"}`, k.ID), nil
}

// String lists the keys' IDs, current first, never their secrets.
func (ks Keys) String() string {
	ids := make([]string, len(ks))
	for i, k := range ks {
		ids[i] = k.String()
	}
	return "Keys[" + strings.Join(ids, ", ") + "]"
}

// GoString is String.
func (ks Keys) GoString() string { return ks.String() }

// Format prints String for every verb.
func (ks Keys) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, ks.String()) }

// LogValue logs the IDs only.
func (ks Keys) LogValue() slog.Value { return slog.StringValue(ks.String()) }

// MarshalJSON encodes the IDs only.
func (ks Keys) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, "%q", ks.String()), nil }

// ParseKeys reads a key ring from text such as an environment variable:
// comma-separated ID:SECRET pairs, current key first, each SECRET the
// standard base64 encoding of at least MinSecretLen random bytes:
//
//	MGMEVENTS_KEYS="2026-11:q0Vb…=,2026-01:Zx9p…="
//	keys, err := encryption.ParseKeys(os.Getenv("MGMEVENTS_KEYS"))
//
// It refuses what New would refuse (an empty text, a secret shorter than
// MinSecretLen), so that a bad variable is reported where it is read.
// Errors name the key's position, never its secret; an ID is quoted only
// when it is too short to be a secret (see keyRef).
func ParseKeys(s string) (Keys, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	if strings.TrimSpace(strings.Join(parts, "")) == "" {
		return nil, fmt.Errorf("encryption: ParseKeys: no keys (the text is empty); want ID:BASE64SECRET pairs separated by commas, the current key first: %w", ErrKey)
	}
	var ks Keys
	for i, part := range parts {
		id, secret, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || id == "" {
			return nil, fmt.Errorf("encryption: ParseKeys: key %d: want ID:BASE64SECRET: %w", i, ErrKey)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(secret))
		if err != nil {
			return nil, fmt.Errorf("encryption: ParseKeys: %s: the secret is not standard base64: %w", keyRef(i, id), ErrKey)
		}
		k := Key{ID: id, Secret: b}
		if err := checkKey(i, k); err != nil {
			return nil, fmt.Errorf("encryption: ParseKeys: %w", err)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// derivedKeys are the per-purpose keys HKDF derives from one secret.
type derivedKeys struct {
	id    string
	idLen byte
	aead  []byte // AES-256-GCM key
	index []byte // HMAC-SHA-256 key of blind indexes
}

// HKDF labels: one key per purpose, never one key for two.
const (
	hkdfSalt      = "mgmevents field encryption"
	infoEncrypt   = "mgmevents/v1 AES-256-GCM field encryption"
	infoBlindIdx  = "mgmevents/v1 HMAC-SHA-256 blind index"
	maxKeyIDBytes = 255
)

// maxQuotedID is the length below which errors quote a key's ID. A longer
// text could be a secret given in the ID's place (ID and secret swapped in
// ParseKeys' text or in a Key), and an error must never hold a secret; no
// shorter text holds even half of a secret New accepts.
const maxQuotedID = MinSecretLen / 2

// keyRef names key i of a ring in an error: by its position, and by its ID
// when the ID is shorter than maxQuotedID, or else by the ID's length.
func keyRef(i int, id string) string {
	if len(id) < maxQuotedID {
		return fmt.Sprintf("key %d (%q)", i, id)
	}
	return fmt.Sprintf("key %d (its ID of %d bytes is not shown: it could be a secret)", i, len(id))
}

// checkKey refuses key i of a ring when New cannot use it.
func checkKey(i int, k Key) error {
	switch {
	case k.ID == "":
		return fmt.Errorf("key %d has an empty ID: %w", i, ErrKey)
	case len(k.ID) > maxKeyIDBytes:
		return fmt.Errorf("key %d: the ID is longer than %d bytes: %w", i, maxKeyIDBytes, ErrKey)
	case len(k.Secret) < MinSecretLen:
		return fmt.Errorf("%s: the secret has %d bytes; at least %d random bytes are needed: %w", keyRef(i, k.ID), len(k.Secret), MinSecretLen, ErrKey)
	}
	return nil
}

// deriveKeys checks k and derives its keys.
func deriveKeys(i int, k Key) (derivedKeys, error) {
	if err := checkKey(i, k); err != nil {
		return derivedKeys{}, fmt.Errorf("encryption: %w", err)
	}
	enc, err := hkdf.Key(sha256.New, k.Secret, []byte(hkdfSalt), infoEncrypt, 32)
	if err != nil {
		return derivedKeys{}, fmt.Errorf("encryption: %s: deriving: %w", keyRef(i, k.ID), err)
	}
	idx, err := hkdf.Key(sha256.New, k.Secret, []byte(hkdfSalt), infoBlindIdx, 32)
	if err != nil {
		return derivedKeys{}, fmt.Errorf("encryption: %s: deriving: %w", keyRef(i, k.ID), err)
	}
	return derivedKeys{id: k.ID, idLen: byte(len(k.ID)), aead: enc, index: idx}, nil
}
