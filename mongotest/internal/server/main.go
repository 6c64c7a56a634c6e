// Command server is mongotest's embedded server: FerretDB 1.24 with a
// SQLite backend, listening on 127.0.0.1 at a free port. mongotest builds
// it once per machine and runs it in a child process, so that a test
// binary links none of it. It prints its URI, alone on the first line of
// its standard output, and serves until its standard input closes (as it
// does when the parent process ends, however it ends), or until it is
// interrupted.
//
//	server -data DIR [-log]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	os.Exit(serve(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// serve runs the server until stdin closes or a signal arrives, and
// returns the exit code.
func serve(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mongotest server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "the data directory (required; it must exist)")
	logs := fs.Bool("log", false, "write the server's log to standard error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *data == "" {
		fmt.Fprintln(stderr, "mongotest server: -data is required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		stop()
	}()
	logger := slog.New(slog.DiscardHandler)
	if *logs {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	if err := run(ctx, *data, logger, stdout); err != nil {
		fmt.Fprintln(stderr, "mongotest server:", err)
		return 1
	}
	return 0
}

// run starts FerretDB on dir, prints its URI on out, and serves until ctx
// ends.
func run(ctx context.Context, dir string, logger *slog.Logger, out io.Writer) error {
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/",
		Logger:    logger,
	})
	if err != nil {
		return fmt.Errorf("starting FerretDB: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	uri, err := waitURI(f, done)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, uri); err != nil {
		return err
	}
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// waitURI returns the listener's URI. FerretDB knows the port only once
// Run listens, and MongoDBURI blocks until then, so give up if Run ends or
// takes too long.
func waitURI(f *ferretdb.FerretDB, done <-chan error) (string, error) {
	ch := make(chan string, 1)
	go func() { ch <- f.MongoDBURI() }()
	select {
	case uri := <-ch:
		return uri, nil
	case err := <-done:
		return "", fmt.Errorf("FerretDB stopped before it listened: %v", err)
	case <-time.After(30 * time.Second):
		return "", errors.New("FerretDB did not listen within 30s")
	}
}
