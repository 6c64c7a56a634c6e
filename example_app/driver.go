package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// The driver-v1 line's form of the switch between the lines (the v2 line
// keeps its own): -driver v2 runs the v2 line's example_app, in the
// mongov2 module beside this one, and the bench's -driver both runs its
// bench after this one's, on the same server.

// line is the driver line this example_app is of.
const line = "v1"

// otherLine runs the command for driver when another line's example_app
// runs it, and reports whether it did.
func otherLine(driver string, args []string, out, errOut io.Writer) (int, bool) {
	if driver != "v2" {
		return 0, false
	}
	cmd, err := v2Command(args...)
	if err != nil {
		return fail(out, err), true
	}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), true
		}
		return fail(out, err), true
	}
	return 0, true
}

// otherBench runs the v2 line's bench with args on uri and database db,
// and returns its figures.
func otherBench(uri, db string, args []string, progress io.Writer) ([]figure, error) {
	tmp, err := os.CreateTemp("", "mgmevents-bench-v2-*.json")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	// Ours last, so that they win over the caller's -uri, -db and -json.
	cmd, err := v2Command(append(append([]string{"bench"}, args...), "-uri", uri, "-db", db, "-json", tmp.Name())...)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = io.Discard, progress
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the v2 line's bench: %w", err)
	}
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		return nil, err
	}
	var figs []figure
	return figs, json.Unmarshal(b, &figs)
}

// v2Command returns `go run ./example_app args...` in the v2 line's module.
func v2Command(args ...string) (*exec.Cmd, error) {
	_, self, _, ok := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "mongov2")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); !ok || err != nil {
		return nil, errors.New("-driver v2 runs the v2 line from the source tree (mongov2/ beside example_app/); it is not found")
	}
	cmd := exec.Command("go", append([]string{"run", "./example_app"}, args...)...)
	cmd.Dir = dir
	return cmd, nil
}
