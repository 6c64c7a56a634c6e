package encryption_test

import (
	"encoding/base64"
	"testing"

	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseKeysSaysWhatIsWrong: ParseKeys refuses what New would, with an
// error that says what is missing, rather than one about a key 0 that
// was never given or a ring that fails later.
func TestParseKeysSaysWhatIsWrong(t *testing.T) {
	for _, text := range []string{"", "  ", " , "} {
		_, err := encryption.ParseKeys(text)
		require.ErrorIs(t, err, encryption.ErrKey, "%q", text)
		assert.ErrorContains(t, err, "no keys", "%q", text)
		assert.NotContains(t, err.Error(), "key 0", "%q", text)
	}
	five := base64.StdEncoding.EncodeToString([]byte("12345"))
	_, err := encryption.ParseKeys("k1:" + five)
	require.ErrorIs(t, err, encryption.ErrKey, "a 5-byte secret")
	assert.ErrorContains(t, err, "5 bytes")
	assert.ErrorContains(t, err, `"k1"`)
	assert.NotContains(t, err.Error(), five)
}
