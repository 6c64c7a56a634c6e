package model

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The key table stays bounded whatever keys the documents hold.
func TestRawKeysBounded(t *testing.T) {
	saved := rawKeys.m.Load()
	rawKeys.m.Store(nil)
	t.Cleanup(func() { rawKeys.m.Store(saved) }) // the full table would slow the other tests' keys
	for i := range 2 * maxRawKeys {
		k := fmt.Sprintf("unique_key_%d", i)
		assert.Equal(t, k, rawKey([]byte(k)))
	}
	long := strings.Repeat("k", maxRawKey+1)
	assert.Equal(t, long, rawKey([]byte(long)))
	m := *rawKeys.m.Load()
	assert.LessOrEqual(t, len(m), maxRawKeys)
	assert.NotContains(t, m, long)
}
