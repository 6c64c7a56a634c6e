package listeners_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSetupWiring: the wiring recipe of docs/setup.md is the code of
// Example_wiring, word for word, so the recipe a reader copies compiles and
// runs.
func TestSetupWiring(t *testing.T) {
	readme, err := os.ReadFile("../docs/setup.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- wiring:[^>]*-->\n```go\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "docs/setup.md has no wiring block after its <!-- wiring: --> marker")
	example, err := os.ReadFile("example_wiring_test.go")
	require.NoError(t, err)
	recipe := string(m[1])
	assert.Contains(t, recipe, "func newBus(")
	assert.True(t, strings.Contains(string(example), recipe),
		"docs/setup.md's wiring recipe differs from newBus in listeners/example_wiring_test.go; copy one to the other")
}
