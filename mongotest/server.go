// Package mongotest gives tests, examples and demos a MongoDB-compatible
// server, in the spirit of net/http/httptest: FerretDB 1.24 embedded in the
// process with a SQLite backend, listening on 127.0.0.1 at a free port, or
// the real MongoDB deployment named by the MONGODB_URI environment variable.
//
// The embedded server is not MongoDB. Its findAndModify is not atomic across
// connections and it has no transactions; unique indexes and _id uniqueness
// are enforced. Code that must run on both should assume no more; tests that
// need more call Server.Require, which skips with the reason.
package mongotest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
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
	// Embedded is true for the in-process FerretDB.
	Embedded bool

	dir     string
	ownsDir bool
	cancel  context.CancelFunc
	done    chan struct{}
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
	logger    *slog.Logger
	ignoreEnv bool
}

// WithDataDir keeps the embedded server's data in dir, so that it survives
// restarts. The default is a new temporary directory, removed by Close.
func WithDataDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithLogger shows the embedded server's logs; they are silenced by default.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// IgnoreEnv starts the embedded server even when MONGODB_URI is set.
func IgnoreEnv() Option { return func(c *config) { c.ignoreEnv = true } }

// NewServer starts the embedded server, or connects to MONGODB_URI when it
// is set, and waits until it answers a ping.
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
	s := &Server{Embedded: true, dir: c.dir, done: make(chan struct{})}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "mongotest-")
		if err != nil {
			return nil, fmt.Errorf("mongotest: temporary directory: %w", err)
		}
		s.dir, s.ownsDir = d, true
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("mongotest: data directory: %w", err)
	}
	logger := c.logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Handler:   "sqlite",
		SQLiteURL: "file:" + s.dir + "/",
		Logger:    logger,
	})
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("mongotest: starting FerretDB: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		_ = f.Run(runCtx)
	}()
	uri, err := waitURI(f, s.done)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.URI = uri
	if err := s.probe(ctx, 100); err != nil {
		s.Close()
		return nil, fmt.Errorf("mongotest: embedded FerretDB: %w", err)
	}
	return s, nil
}

// waitURI returns the listener's URI. FerretDB knows the port only once
// Run listens, and MongoDBURI blocks until then, so give up if Run ends or
// takes too long.
func waitURI(f *ferretdb.FerretDB, done <-chan struct{}) (string, error) {
	ch := make(chan string, 1)
	go func() { ch <- f.MongoDBURI() }()
	select {
	case uri := <-ch:
		return uri, nil
	case <-done:
		return "", errors.New("mongotest: FerretDB stopped before it listened")
	case <-time.After(30 * time.Second):
		return "", errors.New("mongotest: FerretDB did not listen within 30s")
	}
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

// Client connects a new client to the server. Close it with Disconnect.
func (s *Server) Client(ctx context.Context, opts ...*options.ClientOptions) (*mongo.Client, error) {
	all := append([]*options.ClientOptions{options.Client().ApplyURI(s.URI)}, opts...)
	return mongo.Connect(ctx, all...)
}

// Close stops the embedded server and removes its temporary directory. It
// does nothing for an external server. It is safe to call twice.
func (s *Server) Close() error {
	if s == nil || !s.Embedded || s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		return errors.New("mongotest: FerretDB did not stop within 10s")
	}
	s.removeDir()
	return nil
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

// Start starts a server for one test or benchmark and closes it when tb
// ends. It fails tb if the server cannot start.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := NewServer(context.Background(), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

var dbSeq atomic.Int64

// Database returns a new database with a unique name for one test, on a new
// client; both are dropped and closed when tb ends.
func (s *Server) Database(tb testing.TB, opts ...*options.ClientOptions) *mongo.Database {
	tb.Helper()
	ctx := context.Background()
	client, err := s.Client(ctx, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	name := UniqueName(tb.Name())
	db := client.Database(name)
	tb.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	return db
}

// AtomicDatabase returns a new database like Database, on which a
// findAndModify or a filtered update is applied atomically. MongoDB does
// that on any client, so it is Database there. FerretDB does it for one
// connection at a time only, so on the embedded server the client gets a
// single connection (maxPoolSize 1) and every command of the test is
// serialized on it. Code that races several clients still needs MongoDB.
func (s *Server) AtomicDatabase(tb testing.TB) *mongo.Database {
	tb.Helper()
	if s.info.AtomicFindMod {
		return s.Database(tb)
	}
	return s.Database(tb, options.Client().SetMaxPoolSize(1))
}

// UniqueName returns a database name made from base that no other call in
// this process returns.
func UniqueName(base string) string {
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("%s_%d_%d", name, os.Getpid(), dbSeq.Add(1))
}

// Main is a TestMain for packages whose tests share one server: it starts
// the server (or connects to MONGODB_URI), stores it in *srv, runs the
// tests, closes the server and returns the exit code.
//
//	var srv *mongotest.Server
//
//	func TestMain(m *testing.M) { os.Exit(mongotest.Main(m, &srv)) }
func Main(m interface{ Run() int }, srv **Server) int {
	s, err := NewServer(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*srv = s
	defer s.Close()
	return m.Run()
}

// Docs returns the documents of coll that match filter (nil matches all),
// raw and in _id order, as the server holds them: for tests that check the
// database itself, not the library's view of it. It fails tb on an error.
func Docs(tb testing.TB, coll *mongo.Collection, filter any) []bson.Raw {
	tb.Helper()
	if filter == nil {
		filter = bson.D{}
	}
	ctx := context.Background()
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		tb.Fatal(err)
	}
	defer cur.Close(ctx)
	var out []bson.Raw
	for cur.Next(ctx) {
		out = append(out, bson.Raw(slices.Clone(cur.Current)))
	}
	if err := cur.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Database starts a server (or uses MONGODB_URI), connects, and returns a
// database of a unique name with the function that drops it and stops
// everything: for runnable examples and programs, where there is no
// testing.TB. Tests use Start or Main. As with AtomicDatabase, a
// findAndModify or a filtered update is applied atomically: on the
// embedded server the client has a single connection.
func Database(ctx context.Context, base string, opts ...Option) (*mongo.Database, func(), error) {
	srv, err := NewServer(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	var copts []*options.ClientOptions
	if !srv.info.AtomicFindMod {
		copts = append(copts, options.Client().SetMaxPoolSize(1))
	}
	client, err := srv.Client(ctx, copts...)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	db := client.Database(UniqueName(base))
	return db, func() { _ = db.Drop(ctx); _ = client.Disconnect(ctx); srv.Close() }, nil
}
