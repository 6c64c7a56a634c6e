package mongotest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// process is the embedded server running in a child process.
type process struct {
	uri  string
	stop func() error
}

// startProcess runs the server executable bin on the data directory dir
// and waits for the URI it prints. The child stops when this process ends,
// however it ends: its standard input closes then. Its log goes to logw
// when that is not nil; otherwise what it writes on standard error is kept
// for the error of a failed start.
func startProcess(ctx context.Context, bin, dir string, logw io.Writer) (*process, error) {
	args := []string{"-data", dir}
	var errs firstBytes
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &errs
	if logw != nil {
		cmd.Args = append(cmd.Args, "-log")
		cmd.Stderr = logw
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mongotest: server process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("mongotest: server process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mongotest: server process %s: %w", bin, err)
	}
	p := &process{stop: stopper(cmd, stdin)}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		if uri := strings.TrimSpace(line); strings.HasPrefix(uri, "mongodb://") {
			p.uri = uri
			return p, nil
		}
		_ = p.stop()
		return nil, fmt.Errorf("mongotest: server process %s printed no URI: %q %s", bin, line, errs.String())
	case <-ctx.Done():
		_ = p.stop()
		return nil, fmt.Errorf("mongotest: server process: %w", ctx.Err())
	case <-time.After(time.Minute):
		_ = p.stop()
		return nil, errors.New("mongotest: server process: no URI within a minute")
	}
}

// stopper returns the function that stops cmd: it closes the child's
// standard input, waits for it to end, and kills it after 10 seconds.
func stopper(cmd *exec.Cmd, stdin io.Closer) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			_ = stdin.Close()
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				err = errors.New("mongotest: the server process did not stop within 10s; killed")
			}
		})
		return err
	}
}

// firstBytes keeps the first 4 KiB written to it.
type firstBytes struct {
	mu  sync.Mutex
	buf []byte
}

func (t *firstBytes) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := 4096 - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *firstBytes) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
