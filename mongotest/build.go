package mongotest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
)

// The embedded server is the main package serverPkg of module modulePath.
// A test binary does not link it: serverBinary builds it once, with the go
// command, into the user's cache directory, and NewServer runs it in a
// child process.
const (
	modulePath = "github.com/mgmevents/mgmevents"
	serverPkg  = "mongotest/internal/server"
)

// buildFlags are the go build flags of the server: without FerretDB's
// PostgreSQL backend, which it does not use, and without symbol tables,
// which makes it smaller and faster to link. They are part of the cache key.
var buildFlags = []string{"-tags=ferretdb_no_postgresql", "-ldflags=-s -w"}

var built struct {
	sync.Mutex
	path string
}

// serverBinary returns the path of the server's executable, building it
// first if no process on this machine has built it from the same sources.
// The cache is keyed by a hash of the server's sources, go.mod and go.sum,
// so another version of this module, or an edited checkout, builds its own.
// Concurrent builds, in this process or others, are safe: one builds while
// the others wait on a lock file, and the executable appears by an atomic
// rename.
func serverBinary(ctx context.Context) (string, error) {
	built.Lock()
	defer built.Unlock()
	if built.path != "" {
		return built.path, nil
	}
	src, err := moduleDir(ctx)
	if err != nil {
		return "", err
	}
	key, err := sourceKey(src)
	if err != nil {
		return "", fmt.Errorf("mongotest: reading the embedded server's sources in %s: %w", src, err)
	}
	dir, err := cacheDir(key)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mongotest-server"+exeSuffix())
	if !exists(bin) {
		if err := buildLocked(ctx, src, dir, bin); err != nil {
			return "", err
		}
	}
	built.path = bin
	return bin, nil
}

// buildLocked builds bin under dir's lock, unless another process built it
// while this one waited. When ctx ends first (the test's deadline), it
// returns an error and leaves the build running: the packages it compiles
// stay in Go's build cache, so the next run only links the server.
func buildLocked(ctx context.Context, src, dir, bin string) error {
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return fmt.Errorf("mongotest: locking %s: %w", dir, err)
	}
	defer unlock()
	if exists(bin) {
		return nil
	}
	removeUnfinished(dir)
	fmt.Fprintf(os.Stderr, "mongotest: building the embedded server (FerretDB) once for this machine into %s\n", dir)
	tmp := filepath.Join(dir, unfinished+rand.Text())
	args := append(append([]string{"build"}, buildFlags...), "-o", tmp, "./"+serverPkg)
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = src
	// The module's own go.mod and go.sum decide the build, whatever the
	// caller's environment says; no C toolchain is needed.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mongotest: building the embedded server needs the go command: %w; set %s to use a running MongoDB instead", err, EnvURI)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return fmt.Errorf("mongotest: the embedded server's first build on this machine (go build in %s, process %d) did not finish before the test's deadline: %w; it goes on, and what it compiles stays in Go's build cache, so the next run only links it; or give go test a longer -timeout",
			src, cmd.Process.Pid, ctx.Err())
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mongotest: building the embedded server in %s (go build ./%s): %w\n%s\nSet %s to use a running MongoDB instead",
			src, serverPkg, err, out.String(), EnvURI)
	}
	if err := os.Rename(tmp, bin); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mongotest: %w", err)
	}
	return nil
}

// unfinished begins the name of an executable being built.
const unfinished = ".build-"

// removeUnfinished removes what builds cut short left in dir. The caller
// holds dir's lock, so no build it waits for writes there.
func removeUnfinished(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), unfinished) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// moduleDir returns the root of this module's source: the directory this
// package was compiled from (the module cache, a replace directive's
// directory, or a checkout), or, when the binary does not say it (built
// with -trimpath, or from a vendor directory), the module cache's copy of
// the version the binary was built with.
func moduleDir(ctx context.Context) (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		if dir := filepath.Dir(filepath.Dir(file)); isSource(dir) {
			return dir, nil
		}
	}
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == modulePath {
				version = m.Version
				if m.Replace != nil && m.Replace.Version != "" {
					version = m.Replace.Version
				}
			}
		}
	}
	if version == "" || version == "(devel)" {
		return "", fmt.Errorf("mongotest: cannot find the source of %s to build the embedded server; set %s to use a running MongoDB", modulePath, EnvURI)
	}
	return download(ctx, version)
}

// download returns the module cache's directory of this module's version,
// downloading it if need be.
func download(ctx context.Context, version string) (string, error) {
	cmd := exec.CommandContext(ctx, goTool(), "mod", "download", "-json", modulePath+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		err = errors.New(m.Error)
	}
	if err != nil || !isSource(m.Dir) {
		return "", fmt.Errorf("mongotest: go mod download %s@%s, to build the embedded server: %v; set %s to use a running MongoDB", modulePath, version, err, EnvURI)
	}
	return m.Dir, nil
}

// isSource reports whether dir is the root of this module's source, with
// the server's package.
func isSource(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(line[len("module "):]), `"`) == modulePath &&
				exists(filepath.Join(dir, filepath.FromSlash(serverPkg), "main.go"))
		}
	}
	return false
}

// sourceKey hashes what the server's executable is built from: go.mod,
// go.sum and the server package's Go files (it imports no other package of
// this module; TestServerImportsNoModulePackage checks it), the build
// flags and the platform.
func sourceKey(src string) (string, error) {
	pkg := filepath.Join(src, filepath.FromSlash(serverPkg))
	entries, err := os.ReadDir(pkg)
	if err != nil {
		return "", err
	}
	files := []string{filepath.Join(src, "go.mod"), filepath.Join(src, "go.sum")}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			files = append(files, filepath.Join(pkg, n))
		}
	}
	slices.Sort(files[2:])
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s %q\n", runtime.GOOS, runtime.GOARCH, buildFlags)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(name), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// cacheDir returns (and makes) the directory of the executable built from
// sources of this key: in the user's cache directory, apart from Go's
// build cache, which `go clean -cache` and a fresh GOCACHE empty.
func cacheDir(key string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "mgmevents", "mongotest-server", key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("mongotest: the embedded server's cache: %w", err)
	}
	return dir, nil
}

// goTool returns the go command. go test and go run put the running
// toolchain's bin directory first on the PATH of the programs they run.
func goTool() string { return "go" }

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
