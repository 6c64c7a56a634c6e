package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mgmevents/mgmevents/mongotest"
)

// serveMain runs the embedded server until interrupted, or with
// -until-stdin-closes until its standard input closes too, and first
// prints its URI, alone on a line: `go run ./example_app serve` in one
// terminal, and MONGODB_URI set to that URI in another.
func serveMain(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("example_app serve", flag.ContinueOnError)
	fs.SetOutput(out)
	data := fs.String("data", "", "keep the embedded server's data in this directory")
	untilStdin := fs.Bool("until-stdin-closes", false, "also stop when standard input closes, as it does when the parent process ends")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: go run ./example_app serve [flags]\n\nRuns the embedded server until interrupted, and prints its URI first.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := []mongotest.Option{mongotest.IgnoreEnv()}
	if *data != "" {
		opts = append(opts, mongotest.WithDataDir(*data))
	}
	s, err := mongotest.NewServer(ctx, opts...)
	if err != nil {
		return fail(out, err)
	}
	defer s.Close()
	fmt.Fprintln(out, s.URI)
	if *untilStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	<-ctx.Done()
	return 0
}

// startProcess runs the embedded server in a child process, this program
// run as serve, and returns its URI and a function that stops it. The
// child stops when this process ends, however it ends: its standard input
// closes then. Without data, the child keeps its data in a temporary
// directory that stop removes once the child has ended.
func startProcess(ctx context.Context, data string) (uri string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("server process: %w", err)
	}
	cleanup := func() {}
	if data == "" {
		if data, err = os.MkdirTemp("", "mgmevents-serve-"); err != nil {
			return "", nil, fmt.Errorf("server process: %w", err)
		}
		dir := data
		cleanup = func() { _ = os.RemoveAll(dir) }
		defer func() {
			if err != nil {
				cleanup()
			}
		}()
	}
	args := []string{"serve", "-until-stdin-closes", "-data", data}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, fmt.Errorf("server process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, fmt.Errorf("server process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("server process: %w", err)
	}
	stop = func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		cleanup()
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		if uri := strings.TrimSpace(line); strings.HasPrefix(uri, "mongodb://") {
			return uri, stop, nil
		}
		stop()
		return "", nil, fmt.Errorf("server process %s serve: no URI on its first line, but %q", exe, line)
	case <-ctx.Done():
		stop()
		return "", nil, fmt.Errorf("server process: %w", ctx.Err())
	case <-time.After(time.Minute):
		stop()
		return "", nil, errors.New("server process: no URI within a minute")
	}
}
