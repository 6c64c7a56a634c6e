package mongotest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envBuildChild makes the test binary a process that only finds or builds
// the server's executable and prints its path (TestConcurrentFirstBuilds).
const envBuildChild = "MONGOTEST_TEST_BUILD_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envBuildChild) != "" {
		bin, err := serverBinary(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(bin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// envBuildTest runs TestConcurrentFirstBuilds, which links the server's
// executable anew (CI sets it).
const envBuildTest = "MGMEVENTS_BUILD_TEST"

// TestConcurrentFirstBuilds starts three processes on an empty cache at
// once: one builds the server, the others wait for it, and all get the
// same working executable.
func TestConcurrentFirstBuilds(t *testing.T) {
	if os.Getenv(envBuildTest) == "" {
		t.Skip("links the server's executable anew, tens of seconds; set " + envBuildTest + "=1")
	}
	home := t.TempDir()
	env := append(os.Environ(), envBuildChild+"=1", "XDG_CACHE_HOME="+home, "HOME="+home)
	const procs = 3
	outs, errs := make([]string, procs), make([]string, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0])
			cmd.Env = env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			assert.NoError(t, err, stderr.String())
			outs[i], errs[i] = strings.TrimSpace(string(out)), stderr.String()
		})
	}
	wg.Wait()
	builds := 0
	for i := range procs {
		assert.Equal(t, outs[0], outs[i], "every process gets the same executable")
		builds += strings.Count(errs[i], "building the embedded server")
	}
	assert.Equal(t, 1, builds, "one process built it: %q", errs)
	require.True(t, strings.HasPrefix(outs[0], home), "the executable is in the user's cache: %s", outs[0])
	entries, err := os.ReadDir(filepath.Dir(outs[0]))
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), ".build-"), "no temporary file is left: %s", e.Name())
	}
	p, err := startProcess(context.Background(), outs[0], t.TempDir(), nil)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p.uri, "mongodb://127.0.0.1:"), p.uri)
	assert.NoError(t, p.stop())
}

// TestSourceKey: the cache key changes with the server's sources, go.mod
// and go.sum, and not with its tests.
func TestSourceKey(t *testing.T) {
	src, err := moduleDir(context.Background())
	require.NoError(t, err)
	dir := t.TempDir()
	pkg := filepath.Join(dir, filepath.FromSlash(serverPkg))
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	for _, name := range []string{"go.mod", "go.sum", filepath.Join(filepath.FromSlash(serverPkg), "main.go")} {
		b, err := os.ReadFile(filepath.Join(src, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	require.True(t, isSource(dir))
	key := func() string {
		k, err := sourceKey(dir)
		require.NoError(t, err)
		return k
	}
	base := key()
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "main_test.go"), []byte("package main\n"), 0o644))
	assert.Equal(t, base, key(), "a test file does not change the server")
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "extra.go"), []byte("package main\n"), 0o644))
	withFile := key()
	assert.NotEqual(t, base, withFile, "a new source file")
	f, err := os.OpenFile(filepath.Join(dir, "go.sum"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("example.com/x v1.0.0 h1:x=\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.NotEqual(t, withFile, key(), "go.sum")
}

// TestServerImportsNoModulePackage: the server's executable depends on no
// other package of this module, so sourceKey, which hashes only the
// server's package, go.mod and go.sum, sees every change that matters.
// And this package links none of the server.
func TestServerImportsNoModulePackage(t *testing.T) {
	list := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", "-tags=ferretdb_no_postgresql", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		require.NoError(t, err)
		return strings.Fields(string(out))
	}
	for _, p := range list("./internal/server") {
		if strings.HasPrefix(p, modulePath+"/") {
			assert.Equal(t, modulePath+"/"+serverPkg, p, "the server imports a package of this module")
		}
	}
	for _, p := range list(".") {
		assert.NotContains(t, strings.ToLower(p), "ferretdb", "mongotest links the server")
	}
}

// TestBuildCutShortGoesOn: a build the test's deadline cuts short returns
// an error that says so and goes on; the next build removes what it left
// and finishes. The module built is a small stand-in with the server's
// path, so that the build takes a second.
func TestBuildCutShortGoesOn(t *testing.T) {
	src := t.TempDir()
	pkg := filepath.Join(src, filepath.FromSlash(serverPkg))
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	dir := t.TempDir()
	bin := filepath.Join(dir, "mongotest-server")

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	err := buildLocked(ended, src, dir, bin)
	require.Error(t, err)
	assert.ErrorContains(t, err, "did not finish before the test's deadline")
	assert.ErrorContains(t, err, "-timeout")
	assert.NoFileExists(t, bin)
	left := func() []string {
		m, err := filepath.Glob(filepath.Join(dir, unfinished+"*"))
		require.NoError(t, err)
		return m
	}
	require.Eventually(t, func() bool { return len(left()) == 1 }, time.Minute, 50*time.Millisecond,
		"the build goes on and writes its executable")

	require.NoError(t, buildLocked(context.Background(), src, dir, bin))
	assert.FileExists(t, bin)
	assert.Empty(t, left(), "what the cut build left is removed")
}
