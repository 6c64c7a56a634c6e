package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mgmevents/mgmevents/mongotest"
)

// serveMain runs the embedded server until interrupted, and first prints
// its URI, alone on a line: `go run ./example_app serve` in one terminal,
// and MONGODB_URI set to that URI in another.
func serveMain(args []string, out io.Writer) int {
	fs := flag.NewFlagSet("example_app serve", flag.ContinueOnError)
	fs.SetOutput(out)
	data := fs.String("data", "", "keep the embedded server's data in this directory")
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
	<-ctx.Done()
	return 0
}
