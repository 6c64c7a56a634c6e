package outbox_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// The test binary re-executes itself as a child process when childEnv is
// set. Modes:
//
//	write:  insert orders with one to three events each, and every third
//	        write Save an earlier order with one more event; after each
//	        acknowledged write print its event IDs on one line. Runs until
//	        killed.
//	relay:  Run a relay whose publisher stores each message it is given in
//	        the collection "published" (a broker that acknowledges by
//	        writing), failing one publish in ten; runs until killed or
//	        SIGTERM. A publish that returns within lateMargin of its
//	        deadline, or after it, also stores the message's ID in "late":
//	        the relay may have given up on it, and publish it again.
const childEnv = "MGMEVENTS_OUTBOX_CHILD"

// stressEnv, when set, makes the kill tests larger.
const stressEnv = "MGMEVENTS_OUTBOX_STRESS"

func childMain(mode string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// One connection: the outbox refuses more on FerretDB, whose updates
	// are not atomic across connections. The processes of these tests
	// never update one document at once, but for a relay whose lease ran
	// out, which MongoDB makes harmless and FerretDB does not.
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(os.Getenv("CHILD_URI")).SetMaxPoolSize(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	db := client.Database(os.Getenv("CHILD_DB"))
	switch mode {
	case "write":
		err = childWrite(ctx, db)
	case "relay":
		err = childRelay(ctx, db)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

func childWrite(ctx context.Context, db *mongo.Database) error {
	bus := events.NewBus()
	bus.Register(outbox.New())
	orders, err := repo.New[*order](bus, repo.WithDatabase(db))
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	var written []*order
	for i := 0; ; i++ {
		var o *order
		if i%3 == 2 {
			o = written[rand.IntN(len(written))]
			o.Record("order.changed", placed{N: i})
		} else {
			o = &order{Status: "placed"}
			for range 1 + rand.IntN(3) {
				o.Record("order.placed", placed{N: i})
			}
		}
		evs := ids(o.Recorded())
		if err := orders.Save(ctx, o); err != nil {
			return err
		}
		if i%3 != 2 {
			written = append(written, o)
		}
		fmt.Fprintln(out, strings.Join(evs, " "))
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// lateMargin: a publish that returns with less than this left before its
// deadline may be given up on by the relay (which waits for it with a
// select) though it went through.
const lateMargin = 100 * time.Millisecond

// publication is a message as the test broker stored it.
type publication struct {
	ID      string `bson:"id"`
	Subject string `bson:"subject"`
	Seq     int64  `bson:"seq"`
	Pid     int    `bson:"pid"`
	At      int64  `bson:"at"` // Unix nanoseconds, one clock for every process of the test
}

func childRelay(ctx context.Context, db *mongo.Database) error {
	published, late := db.Collection("published"), db.Collection("late")
	pub := outbox.PublisherFunc(func(ctx context.Context, m outbox.Message) error {
		if rand.IntN(10) == 0 {
			return errors.New("broker hiccup")
		}
		_, err := published.InsertOne(ctx, publication{ID: m.ID, Subject: m.Subject, Seq: m.Seq, Pid: os.Getpid(), At: time.Now().UnixNano()})
		if d, ok := ctx.Deadline(); !ok || time.Until(d) < lateMargin {
			if _, lerr := late.InsertOne(context.Background(), bson.D{{Key: "id", Value: m.ID}}); lerr != nil {
				return errors.Join(err, lerr)
			}
		}
		return err
	})
	r, err := outbox.NewRelay(db, pub, outbox.WithLease(5*time.Second), outbox.WithBatch(25),
		outbox.WithPollInterval(100*time.Millisecond), outbox.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }),
		outbox.WithMaxAttempts(1000))
	if err != nil {
		return err
	}
	fmt.Println("ready")
	return r.Run(ctx)
}

func child(t *testing.T, db *mongo.Database, mode string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "CHILD_URI="+srv.URI, "CHILD_DB="+db.Name())
	cmd.Stderr = os.Stderr
	return cmd
}

func stress() bool { return os.Getenv(stressEnv) != "" }

// TestKilledWriterLosesNoAcknowledgedEvent: a writer killed with SIGKILL
// mid-run, and a relay started afterwards, delivers every event of every
// write the writer saw acknowledged, in order per document.
func TestKilledWriterLosesNoAcknowledgedEvent(t *testing.T) {
	db := srv.Database(t)
	writes := 150
	if stress() {
		writes = 2000
	}
	cmd := child(t, db, "write")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var acked []string
	began := time.Now()
	lines := bufio.NewScanner(stdout)
	for n := 0; n < writes && lines.Scan(); n++ {
		acked = append(acked, strings.Fields(lines.Text())...)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	for lines.Scan() { // what it printed before it died
		acked = append(acked, strings.Fields(lines.Text())...)
	}
	_ = cmd.Wait()

	t.Logf("writer ran %v", time.Since(began))
	began = time.Now()
	p := &recorder{}
	relay := newRelay(t, db, p)
	for {
		n, err := relay.Drain(ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	t.Logf("relay ran %v", time.Since(began))
	msgs := p.take()
	got := map[string]int{}
	for _, m := range msgs {
		got[m.ID]++
	}
	for _, id := range acked {
		assert.Equal(t, 1, got[id], "acknowledged event %s delivered once", id)
	}
	checkOrder(t, msgs)
	t.Logf("%d events acknowledged, %d delivered (the rest written but not acknowledged before the kill), %d duplicates",
		len(acked), len(msgs), len(msgs)-len(got))
}

// checkOrder checks that each document's messages came with Seq 1, 2, 3, …
func checkOrder(t *testing.T, msgs []outbox.Message) {
	t.Helper()
	next := map[string]int64{}
	for _, m := range msgs {
		if next[m.Subject] == 0 {
			next[m.Subject] = 1
		}
		require.Equal(t, next[m.Subject], m.Seq, "document %s", m.Subject)
		next[m.Subject]++
	}
}

// TestKilledRelay: three relay processes share the outbox; one is killed
// with SIGKILL mid-run. Every event is still delivered, no document's Seq
// n+1 was first published before its Seq n, and the duplicates are
// counted: only messages in flight at the kill, and those whose publish
// returned at its deadline (the relay gave up on it, and published it
// again), may be published twice.
func TestKilledRelay(t *testing.T) {
	db := srv.Database(t)
	docs := 80
	if stress() {
		docs = 1000
	}
	bus := events.NewBus()
	bus.Register(outbox.New())
	orders, err := repo.New[*order](bus, repo.WithDatabase(db))
	require.NoError(t, err)
	var batch []*order
	total := 0
	for i := range docs {
		o := &order{Status: "placed"}
		for j := range 1 + i%4 {
			o.Record("order.step", placed{N: j})
			total++
		}
		batch = append(batch, o)
	}
	require.NoError(t, orders.InsertMany(ctx, batch))

	published := db.Collection("published")
	var relays []*exec.Cmd
	for range 3 {
		cmd := child(t, db, "relay")
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		ready := bufio.NewScanner(out)
		require.True(t, ready.Scan(), "relay started")
		relays = append(relays, cmd)
	}
	defer func() {
		for _, r := range relays[1:] {
			_ = r.Process.Signal(syscall.SIGTERM)
			_ = r.Wait()
		}
	}()
	waitFor(t, published, bson.D{}, int64(total/3), patience(total))
	require.NoError(t, relays[0].Process.Signal(syscall.SIGKILL))
	_ = relays[0].Wait()

	// Done when every event is published and no document holds one: a
	// relay removes what it published after publishing it, and what the
	// killed relay published but did not remove waits for its lease to
	// end, to be published again by another.
	pending := bson.D{{Key: outbox.Field + ".q.0", Value: bson.D{{Key: "$exists", Value: true}}}}
	deadline := time.Now().Add(patience(total))
	for {
		ids, err := published.Distinct(ctx, "id", bson.D{})
		require.NoError(t, err)
		left, err := db.Collection("orders").CountDocuments(ctx, pending)
		require.NoError(t, err)
		if len(ids) == total && left == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d of %d delivered, %d documents with events left", len(ids), total, left)
		time.Sleep(100 * time.Millisecond)
	}
	cur, err := published.Find(ctx, bson.D{})
	require.NoError(t, err)
	var pubs []publication
	require.NoError(t, cur.All(ctx, &pubs))
	sort.Slice(pubs, func(i, j int) bool { return pubs[i].At < pubs[j].At })
	first := map[string]publication{}
	dups := 0
	for _, p := range pubs {
		if _, ok := first[p.ID]; ok {
			dups++
			continue
		}
		first[p.ID] = p
	}
	seen := map[string]int64{}
	for _, p := range pubs {
		if first[p.ID] != p {
			continue
		}
		assert.Equal(t, seen[p.Subject]+1, p.Seq, "document %s: Seq %d first published after Seq %d", p.Subject, p.Seq, seen[p.Subject])
		seen[p.Subject] = p.Seq
	}
	lateIDs, err := db.Collection("late").Distinct(ctx, "id", bson.D{})
	require.NoError(t, err)
	var killed, inFlight, lateDups int
	for _, p := range pubs {
		if p.Pid == relays[0].Process.Pid {
			killed++
		}
	}
	for id, p := range first {
		n := countOf(pubs, id)
		switch {
		case n == 1:
		case p.Pid == relays[0].Process.Pid:
			inFlight += n - 1
		case slices.Contains(lateIDs, any(id)):
			lateDups += n - 1
		}
	}
	t.Logf("%d events in %d documents, 3 relays, one killed after publishing %d: %d publications, %d duplicates, %d of them of messages the killed relay had published, %d of publishes that returned at their deadline",
		total, docs, killed, len(pubs), dups, inFlight, lateDups)
	assert.Equal(t, dups, inFlight+lateDups, "only messages in flight at the kill, or given up on at their deadline, are published twice")
}

func countOf(pubs []publication, id string) int {
	n := 0
	for _, p := range pubs {
		if p.ID == id {
			n++
		}
	}
	return n
}

// patience is how long a test waits for n events to be delivered: a
// minute, and more for a larger run, since each removal of FerretDB scans
// the collection.
func patience(n int) time.Duration { return time.Minute + time.Duration(n)*200*time.Millisecond }

// waitFor waits until coll holds at least n documents that match filter.
func waitFor(t *testing.T, coll *mongo.Collection, filter any, n int64, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		c, err := coll.CountDocuments(ctx, filter)
		require.NoError(t, err)
		if c >= n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d of %d", c, n)
		time.Sleep(20 * time.Millisecond)
	}
}
