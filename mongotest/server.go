// Package mongotest gives tests, examples and demos a MongoDB-compatible
// server, in the spirit of net/http/httptest: the embedded server, FerretDB
// 1.24 with a SQLite backend listening on 127.0.0.1 at a free port, or the
// real MongoDB deployment named by the MONGODB_URI environment variable.
//
// The embedded server runs in a child process, so that a test binary links
// none of it. The first NewServer on a machine builds its executable with
// the go command, from this module's own go.mod and go.sum, into the user's
// cache directory (os.UserCacheDir()/mgmevents/mongotest-server), once per
// version of this module; later ones start it in well under a second. The
// child ends with the process that started it, however that ends.
//
// The embedded server is not MongoDB. Its findAndModify is not atomic across
// connections and it has no transactions; unique indexes and _id uniqueness
// are enforced. The databases this package hands out have a single
// connection on it, which makes it apply one command at a time, so every
// feature of this module works on them. Code that must run on both
// should assume no more; tests that need more call Server.Require, which
// skips with the reason.
package mongotest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// EnvURI names the environment variable that switches from the embedded
// server to a real one.
const EnvURI = "MONGODB_URI"

// Server is a running server: embedded, or external when MONGODB_URI is set.
type Server struct {
	// URI is the connection string.
	URI string
	// Embedded is true for the embedded server (FerretDB).
	Embedded bool

	dir     string
	ownsDir bool
	proc    *process
	closed  atomic.Bool
	info    Info
}

// Info is what the server says of itself.
type Info struct {
	Version       string // MongoDB version it reports
	FerretDB      string // FerretDB version; "" on MongoDB
	ReplicaSet    bool   // a replica set member or mongos: transactions work
	Sharded       bool   // a mongos
	AtomicFindMod bool   // findAndModify is atomic across connections
	Transactions  bool   // multi-document transactions are available
}

// Option configures NewServer.
type Option func(*config)

type config struct {
	dir       string
	log       io.Writer
	ignoreEnv bool
}

// WithDataDir keeps the embedded server's data in dir, so that it survives
// restarts. The default is a new temporary directory, removed by Close.
func WithDataDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithLog writes the embedded server's log to w, as text lines; it is
// discarded by default.
func WithLog(w io.Writer) Option { return func(c *config) { c.log = w } }

// IgnoreEnv starts the embedded server even when MONGODB_URI is set.
func IgnoreEnv() Option { return func(c *config) { c.ignoreEnv = true } }

// NewServer starts the embedded server in a child process, or connects to
// MONGODB_URI when it is set, and waits until it answers a ping.
func NewServer(ctx context.Context, opts ...Option) (*Server, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if uri := os.Getenv(EnvURI); uri != "" && !c.ignoreEnv {
		s := &Server{URI: uri}
		if err := s.probe(ctx, 1); err != nil {
			return nil, fmt.Errorf("mongotest: %s=%s: %w", EnvURI, redact(uri), err)
		}
		return s, nil
	}
	bin, err := serverBinary(ctx)
	if err != nil {
		return nil, err
	}
	s := &Server{Embedded: true, dir: c.dir}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "mongotest-")
		if err != nil {
			return nil, fmt.Errorf("mongotest: temporary directory: %w", err)
		}
		s.dir, s.ownsDir = d, true
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("mongotest: data directory: %w", err)
	}
	if s.proc, err = startProcess(ctx, bin, s.dir, c.log); err != nil {
		s.removeDir()
		return nil, err
	}
	s.URI = s.proc.uri
	if err := s.probe(ctx, 100); err != nil {
		s.Close()
		return nil, fmt.Errorf("mongotest: embedded FerretDB: %w", err)
	}
	return s, nil
}

func redact(uri string) string {
	if i := strings.Index(uri, "@"); i > 0 {
		if j := strings.Index(uri, "://"); j > 0 && j < i {
			return uri[:j+3] + "…" + uri[i:]
		}
	}
	return uri
}

// probe pings the server, up to tries times, and reads buildInfo and
// hello.
func (s *Server) probe(ctx context.Context, tries int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(s.URI))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	var err2 error
	for i := range tries {
		if err2 = client.Ping(ctx, nil); err2 == nil {
			break
		}
		if i < tries-1 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err2 != nil {
		return fmt.Errorf("ping: %w", err2)
	}
	var bi bson.M
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&bi); err != nil {
		return fmt.Errorf("buildInfo: %w", err)
	}
	s.info.Version, _ = bi["version"].(string)
	s.info.FerretDB, _ = bi["ferretdbVersion"].(string)
	var hello bson.M
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err == nil {
		_, rs := hello["setName"]
		s.info.Sharded = hello["msg"] == "isdbgrid"
		s.info.ReplicaSet = rs || s.info.Sharded
	}
	s.info.AtomicFindMod = s.info.FerretDB == ""
	s.info.Transactions = s.info.FerretDB == "" && s.info.ReplicaSet
	return nil
}

// Info returns what the server said of itself.
func (s *Server) Info() Info { return s.info }

// Dir returns the embedded server's data directory ("" for MONGODB_URI).
func (s *Server) Dir() string { return s.dir }

// Client connects a new client to the server, with the driver's defaults
// and then opts. Close it with Disconnect.
func (s *Server) Client(ctx context.Context, opts ...*options.ClientOptions) (*mongo.Client, error) {
	all := append([]*options.ClientOptions{options.Client().ApplyURI(s.URI)}, opts...)
	return mongo.Connect(ctx, all...)
}

// oneConnection returns the client options that make every feature work
// on the server: on FerretDB, which applies a findAndModify or a filtered
// update atomically only for one connection at a time, a single connection
// (maxPoolSize 1), so that it applies the client's commands one after
// another, as the outbox, the Atomic sequence strategy and the atomic
// version filter need. MongoDB needs none.
func (s *Server) oneConnection() []*options.ClientOptions {
	if s.info.AtomicFindMod {
		return nil
	}
	return []*options.ClientOptions{options.Client().SetMaxPoolSize(1)}
}

// Close stops the embedded server's process and then removes its temporary
// directory. It does nothing for an external server. It is safe to call
// twice.
func (s *Server) Close() error {
	if s == nil || !s.Embedded || s.closed.Swap(true) {
		return nil
	}
	err := s.proc.stop()
	s.removeDir()
	return err
}

func (s *Server) removeDir() {
	if s.ownsDir {
		os.RemoveAll(s.dir)
	}
}

// Require skips t, saying why, unless the server has the capability:
// "transactions", "atomic-findandmodify" or "change-streams".
func (s *Server) Require(t testing.TB, capability string) {
	t.Helper()
	switch capability {
	case "transactions":
		if !s.info.Transactions {
			t.Skipf("needs multi-document transactions; this server has none (%s)", s.describe())
		}
	case "change-streams":
		if s.info.FerretDB != "" || !(s.info.ReplicaSet || s.info.Sharded) {
			t.Skipf("needs change streams (a MongoDB replica set or sharded cluster); %s", s.describe())
		}
	case "atomic-findandmodify":
		if !s.info.AtomicFindMod {
			t.Skipf("needs findAndModify that is atomic across connections; %s", s.describe())
		}
	default:
		t.Fatalf("mongotest: unknown capability %q", capability)
	}
}

func (s *Server) describe() string {
	if s.info.FerretDB != "" {
		return "embedded FerretDB " + s.info.FerretDB + "; set " + EnvURI + " to a MongoDB replica set"
	}
	kind := "standalone"
	if s.info.Sharded {
		kind = "sharded cluster"
	} else if s.info.ReplicaSet {
		kind = "replica set"
	}
	return "MongoDB " + s.info.Version + " " + kind
}
