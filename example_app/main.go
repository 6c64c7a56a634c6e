// Command example_app shows mgmevents at work: lifecycle events around an
// mgm model, keys filled in automatically, ten goroutines inserting at
// once, and an order number; then the policies: two tenants, an encrypted
// email found by equality, the document as stored, and a soft delete and
// its restore. With no flags it runs on an embedded
// MongoDB-compatible server (FerretDB), so it needs nothing but Go:
//
//	go run ./example_app                   # demo on the embedded server
//	go run ./example_app -data ./shopdata  # keep the data: numbers continue next run
//	go run ./example_app -uri mongodb://localhost:27017/?replicaSet=rs0
//	go run ./example_app bench             # the benchmark; see -h
//	go run ./example_app -driver v2        # the same on the driver-v2 line (mongov2/)
//	go run ./example_app bench -driver both # the bench of both lines, side by side
//	go run ./example_app serve             # only the embedded server, until interrupted
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/mgmevents/mgmevents/mongotest"
)

func main() {
	driver, args, err := takeDriver(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "example_app:", err)
		os.Exit(2)
	}
	bench := len(args) > 0 && args[0] == "bench"
	if driver == "both" && !bench {
		fmt.Fprintln(os.Stderr, "example_app: -driver both is the bench's: go run ./example_app bench -driver both")
		os.Exit(2)
	}
	if driver != "both" {
		if code, ran := otherLine(driver, args, os.Stdout, os.Stderr); ran {
			os.Exit(code)
		}
	}
	if len(args) > 0 {
		switch args[0] {
		case "bench":
			os.Exit(benchMain(args[1:], driver == "both", os.Stdout, os.Stderr))
		case "serve":
			os.Exit(serveMain(args[1:], os.Stdout))
		}
	}
	os.Exit(demoMain(args, os.Stdout))
}

// serverFlags are the flags both commands share.
type serverFlags struct {
	uri  string
	data string
	db   string
}

func (f *serverFlags) register(fs *flag.FlagSet, defaultDB string) {
	fs.StringVar(&f.uri, "uri", os.Getenv(mongotest.EnvURI), "MongoDB URI; empty runs the embedded server (default $"+mongotest.EnvURI+")")
	fs.StringVar(&f.data, "data", "", "keep the embedded server's data in this directory")
	fs.StringVar(&f.db, "db", defaultDB, "database name")
}

// start returns the server's URI and a function that stops it.
func (f *serverFlags) start(ctx context.Context, out io.Writer) (string, func(), error) {
	if f.uri != "" {
		fmt.Fprintf(out, "server: MongoDB at %s\n", f.uri)
		return f.uri, func() {}, nil
	}
	where := "a temporary directory (use -data DIR to keep it)"
	if f.data != "" {
		where = f.data
	}
	opts := []mongotest.Option{mongotest.IgnoreEnv()}
	if f.data != "" {
		opts = append(opts, mongotest.WithDataDir(f.data))
	}
	s, err := mongotest.NewServer(ctx, opts...)
	if err != nil {
		return "", nil, err
	}
	fmt.Fprintf(out, "server: embedded FerretDB in a child process at %s, data in %s\n", s.URI, where)
	return s.URI, func() { s.Close() }, nil
}

func fail(out io.Writer, err error) int {
	fmt.Fprintln(out, "error:", err)
	slog.Error("example_app failed", "err", err)
	return 1
}
