// Package natstest gives tests, examples and demos a NATS server with
// JetStream, in the spirit of net/http/httptest and mongotest: nats-server
// embedded in the process, listening on 127.0.0.1 at a free port, storing
// its streams in a temporary directory.
//
// Only tests, examples and example_app import this package. It is the one
// non-test package of the module that imports nats-server; the library's
// own packages (outbox, outbox/natsjs and the rest) never do, so an
// application that uses them links only the NATS client.
package natstest

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server is a running embedded nats-server with JetStream enabled.
type Server struct {
	// URL is the client URL: nats://127.0.0.1:<port>.
	URL string

	ns      *server.Server
	dir     string
	ownsDir bool
	closed  atomic.Bool
}

// Option configures NewServer.
type Option func(*config)

type config struct {
	dir string
}

// WithDataDir keeps JetStream's data in dir, so that streams survive a
// restart. The default is a new temporary directory, removed by Close.
func WithDataDir(dir string) Option { return func(c *config) { c.dir = dir } }

// NewServer starts the server and waits until it accepts connections.
func NewServer(opts ...Option) (*Server, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s := &Server{dir: c.dir}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "natstest-")
		if err != nil {
			return nil, fmt.Errorf("natstest: temporary directory: %w", err)
		}
		s.dir, s.ownsDir = d, true
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("natstest: data directory: %w", err)
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "natstest",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   s.dir,
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("natstest: configuring nats-server: %w", err)
	}
	s.ns = ns
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		s.Close()
		return nil, errors.New("natstest: nats-server did not accept connections within 30s")
	}
	if !ns.JetStreamEnabled() {
		s.Close()
		return nil, errors.New("natstest: nats-server started without JetStream")
	}
	s.URL = ns.ClientURL()
	return s, nil
}

// Dir returns the directory that holds JetStream's data.
func (s *Server) Dir() string { return s.dir }

// Connect connects a new client to the server. Close it with Close.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(s.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("natstest: connecting to %s: %w", s.URL, err)
	}
	return nc, nil
}

// Close stops the server and removes its temporary directory. It is safe to
// call twice. Clients see the server go away, as in an outage.
func (s *Server) Close() error {
	if s == nil || s.closed.Swap(true) {
		return nil
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.removeDir()
	return nil
}

func (s *Server) removeDir() {
	if s.ownsDir {
		os.RemoveAll(s.dir)
	}
}

// Start starts a server for one test or benchmark, storing its streams in
// tb.TempDir() unless WithDataDir says otherwise, and closes it when tb
// ends. It fails tb if the server cannot start.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := NewServer(append([]Option{WithDataDir(tb.TempDir())}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// JetStream connects a new client and returns its JetStream context. Close
// the connection with js.Conn().Close().
func (s *Server) JetStream(opts ...nats.Option) (jetstream.JetStream, error) {
	nc, err := s.Connect(opts...)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("natstest: JetStream context: %w", err)
	}
	return js, nil
}

// TestJetStream connects a new client for one test and returns its
// JetStream context; the connection closes when tb ends. It fails tb if the
// client cannot connect.
func (s *Server) TestJetStream(tb testing.TB) jetstream.JetStream {
	tb.Helper()
	js, err := s.JetStream()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(js.Conn().Close)
	return js
}
