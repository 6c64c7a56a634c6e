package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchSmall runs the whole bench with the smallest settings: every
// figure is reported, the progress goes to its own writer with one line
// per phase, and -json holds the same figures.
func TestBenchSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every phase of the bench")
	}
	srv := mongotest.Start(t)
	var out, prog bytes.Buffer
	file := filepath.Join(t.TempDir(), "figs.json")
	code := benchMain([]string{"-uri", srv.URI, "-db", mongotest.UniqueName("bench"),
		"-n", "10", "-rounds", "2", "-bulk", "20", "-bulk-rounds", "2", "-workers", "3",
		"-concurrent-rounds", "2", "-update-rounds", "2", "-many-rounds", "1", "-outbox-rounds", "2", "-json", file}, false, &out, &prog)
	require.Equal(t, 0, code, out.String()+prog.String())

	for _, name := range []string{"insert_ratio", "naive_ratio", "tracing_ratio", "tracing_floor_ratio", "bulk_ratio", "p99_ratio", "mgm_ratio", "mgm_control_ratio", "busy_5us_ratio",
		"concurrent_insert_ratio", "update_ratio", "update_many_ratio", "find_ratio", "versioned_save_ratio",
		"tenancy_ratio", "tenancy_findbyid_ratio", "softdelete_find_ratio", "encrypt_insert_ratio", "encrypt_find_ratio",
		"outbox_insert_ratio", "outbox_insert_floor_ratio", "relay_ratio", "relay_floor_ratio", "relay_to_floor_ratio", "relay_lag_p99_ms", "relay_scale_ratio", "relay_scale_raw_ratio",
		"alloc_ns", "dispatch_ns"} {
		assert.Regexp(t, "(?m)^"+name+`: [0-9.]+$`, out.String())
	}
	if os.Getenv(mongotest.EnvURI) == "" {
		assert.Contains(t, out.String(), "strategy claim", "the embedded server needs claims")
	}
	assert.NotContains(t, out.String(), "bench: ", "progress stays off the report")

	lines := strings.Split(strings.TrimSpace(prog.String()), "\n")
	assert.Len(t, lines, len(phases), prog.String())
	for _, want := range []string{"bench: insert 2/2 rounds", "bench: concurrent insert 2/2 rounds", "bench: find 2/2 rounds", "bench: allocator and bus 5/5 benchmarks"} {
		assert.Contains(t, prog.String(), want)
	}

	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var figs []figure
	require.NoError(t, json.Unmarshal(b, &figs))
	for _, f := range figs {
		assert.Contains(t, out.String(), f.Name+": ")
		// Each median of per-round ratios has its interval; the other
		// figures say in their row that they have no rounds.
		if strings.HasSuffix(f.Name, "_ratio") && f.Name != "p99_ratio" {
			if assert.NotNil(t, f.CI95, f.Name) {
				assert.LessOrEqual(t, f.CI95.Lo, f.Value+1e-12, f.Name)
				assert.GreaterOrEqual(t, f.CI95.Hi, f.Value-1e-12, f.Name)
				assert.Positive(t, f.CI95.Rounds, f.Name)
				assert.Regexp(t, "(?m)^"+f.Name+` +[0-9.]+ +[0-9.]+–[0-9.]+ \([0-9]+ rounds\) `, out.String())
			}
		} else {
			assert.Nil(t, f.CI95, f.Name)
			assert.Regexp(t, "(?m)^"+f.Name+` +[0-9.]+ +no rounds `, out.String())
		}
	}
	assert.Contains(t, string(b), `"ci95": null`)
	assert.Regexp(t, `"ci95": \{\s+"lo": [0-9.]+,\s+"hi": [0-9.]+,\s+"rounds": 2\s+\}`, string(b))
}

// TestBenchOnly: -only runs the phases it names and no other, and refuses
// a name that is no phase.
func TestBenchOnly(t *testing.T) {
	srv := mongotest.Start(t)
	var out, prog bytes.Buffer
	code := benchMain([]string{"-uri", srv.URI, "-db", mongotest.UniqueName("bench"), "-n", "10", "-rounds", "2", "-only", "tracing, allocator and bus"}, false, &out, &prog)
	require.Equal(t, 0, code, out.String()+prog.String())
	assert.Regexp(t, "(?m)^tracing_ratio: [0-9.]+$", out.String())
	assert.Regexp(t, "(?m)^dispatch_ns: [0-9.]+$", out.String())
	assert.NotContains(t, out.String(), "insert_ratio")
	assert.Len(t, strings.Split(strings.TrimSpace(prog.String()), "\n"), 2, prog.String())

	out.Reset()
	assert.Equal(t, 2, benchMain([]string{"-only", "tracing,nope"}, false, &out, &prog))
	assert.Contains(t, out.String(), `no phase "nope"`)
}
