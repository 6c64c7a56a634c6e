package mongotest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Start starts a server for one test or benchmark and closes it when tb
// ends. It fails tb if the server cannot start.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	ctx := context.Background()
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := t.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-deadlineMargin))
			defer cancel()
		}
	}
	s, err := NewServer(ctx, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Database returns a new database with a unique name for one test, on a new
// client; both are dropped and closed when tb ends. Every feature of this
// module works on it, the outbox included: on the embedded server its
// client has a single connection (maxPoolSize 1), unless opts set another
// pool size, because FerretDB applies a findAndModify or a filtered update
// atomically only for one connection at a time.
func (s *Server) Database(tb testing.TB, opts ...*options.ClientOptions) *mongo.Database {
	tb.Helper()
	return s.database(tb, append(s.oneConnection(), opts...))
}

// PooledDatabase returns a new database like Database, on a client with
// the driver's pool (up to 100 connections), for tests that race several
// connections. On the embedded server a findAndModify or a filtered update
// is then not atomic across them, and the outbox refuses the database.
func (s *Server) PooledDatabase(tb testing.TB, opts ...*options.ClientOptions) *mongo.Database {
	tb.Helper()
	return s.database(tb, opts)
}

func (s *Server) database(tb testing.TB, opts []*options.ClientOptions) *mongo.Database {
	tb.Helper()
	ctx := context.Background()
	client, err := s.Client(ctx, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	db := client.Database(UniqueName(tb.Name()))
	tb.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	return db
}

var dbSeq atomic.Int64

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
	ctx, cancel := mainContext()
	s, err := NewServer(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*srv = s
	defer s.Close()
	return m.Run()
}

// deadlineMargin is the time before a test's deadline at which Start and
// Main stop waiting for the first build of the server, so that the test
// fails with the reason rather than with the test binary's timeout.
const deadlineMargin = 15 * time.Second

// mainContext returns the context of Main's NewServer: one that ends
// before the test binary's -timeout.
func mainContext() (context.Context, context.CancelFunc) {
	if !flag.Parsed() {
		flag.Parse() // as TestMain must, to read the testing package's flags
	}
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				return context.WithTimeout(context.Background(), d-deadlineMargin)
			}
		}
	}
	return context.WithCancel(context.Background())
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
// testing.TB. Tests use Start or Main. As with Server.Database, every
// feature works on it: on the embedded server the client has a single
// connection.
func Database(ctx context.Context, base string, opts ...Option) (*mongo.Database, func(), error) {
	srv, err := NewServer(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	client, err := srv.Client(ctx, srv.oneConnection()...)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	db := client.Database(UniqueName(base))
	return db, func() { _ = db.Drop(ctx); _ = client.Disconnect(ctx); srv.Close() }, nil
}
