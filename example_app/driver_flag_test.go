package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTakeDriver: -driver is taken from anywhere among the arguments, in
// each form the flag package accepts, and a wrong value is refused.
func TestTakeDriver(t *testing.T) {
	d, rest, err := takeDriver([]string{"bench", "-n", "10"})
	require.NoError(t, err)
	assert.Equal(t, line, d, "this line by default")
	assert.Equal(t, []string{"bench", "-n", "10"}, rest)
	for _, args := range [][]string{{"bench", "-driver", "both", "-n", "10"}, {"bench", "--driver=both", "-n", "10"}, {"bench", "-driver=both", "-n", "10"}} {
		d, rest, err = takeDriver(args)
		require.NoError(t, err, "%q", args)
		assert.Equal(t, "both", d)
		assert.Equal(t, []string{"bench", "-n", "10"}, rest)
	}
	_, _, err = takeDriver([]string{"-driver", "v3"})
	assert.ErrorContains(t, err, `-driver "v3"`)
	_, _, err = takeDriver([]string{"-driver"})
	assert.Error(t, err)
}
