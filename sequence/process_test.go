package sequence_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// The test binary re-executes itself as a child process when childEnv is
// set; the child takes numbers from the parent's server and exits.
const childEnv = "MGMEVENTS_SEQUENCE_CHILD"

// childMain is the child's whole life. Modes:
//
//	print N:  take N numbers from 4 goroutines and print them, one a line;
//	insert N: take numbers one by one and insert each as {n: v} into the
//	          collection "taken", until it holds N documents (checked
//	          every 10 inserts, so it may hold up to 9 more);
//	take N:   take N numbers one by one and insert each into "taken".
//
// CHILD_CLOSE=1 closes the allocator at the end; CHILD_STRATEGY forces a
// strategy; CHILD_DEFAULTS=1 keeps the default block sizes (batch 100,
// growth 16) instead of fixed blocks of 25; CHILD_STATS=1 inserts the
// allocator's Stats into the collection "stats" before it exits.
func childMain() int {
	mode, n := os.Getenv(childEnv), atoi(os.Getenv("CHILD_N"))
	ctx := context.Background()
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(os.Getenv("CHILD_URI")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	db := client.Database(os.Getenv("CHILD_DB"))
	opts := []sequence.Option{sequence.WithStrategy(sequence.Strategy(atoi(os.Getenv("CHILD_STRATEGY"))))}
	if os.Getenv("CHILD_DEFAULTS") == "" {
		opts = append(opts, sequence.WithBatch(25), sequence.WithMaxGrowth(1))
	}
	a, err := sequence.New(db, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if code := childWork(ctx, a, db, mode, n); code != 0 {
		return code
	}
	if os.Getenv("CHILD_CLOSE") != "" {
		if err := a.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 4
		}
	}
	if os.Getenv("CHILD_STATS") != "" {
		if _, err := db.Collection("stats").InsertOne(ctx, a.Stats()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 5
		}
	}
	return 0
}

func childWork(ctx context.Context, a *sequence.Allocator, db *mongo.Database, mode string, n int) int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch mode {
	case "print":
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n / 4 {
					v, err := a.Next(ctx, "procs")
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(3)
					}
					mu.Lock()
					fmt.Fprintln(out, v)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	case "insert", "take":
		coll := db.Collection("taken")
		for i := 0; ; i++ {
			if mode == "take" && i == n {
				return 0
			}
			if mode == "insert" && i%10 == 0 { // counting scans the collection
				c, err := coll.CountDocuments(ctx, bson.M{})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 3
				}
				if c >= int64(n) {
					return 0
				}
			}
			v, err := a.Next(ctx, "killed")
			if err == nil {
				_, err = coll.InsertOne(ctx, bson.M{"n": v})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
		}
	}
	return 0
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func child(t *testing.T, db *mongo.Database, mode string, n int, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "CHILD_N="+strconv.Itoa(n),
		"CHILD_URI="+srv.URI, "CHILD_DB="+db.Name())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// strategyEnv makes children use st, through uriFor's URI.
func strategyEnv(t *testing.T, st sequence.Strategy) []string {
	return []string{"CHILD_STRATEGY=" + strconv.Itoa(int(st)), "CHILD_URI=" + uriFor(t, st)}
}

// TestProcessesShareASequence runs three OS processes, four goroutines
// each, on one sequence of one server: every number is distinct and none is
// lost from the count. Each process has its own connections, and FerretDB's
// findAndModify is not atomic across connections, so there Atomic runs
// through serialURI's proxy, which lets one command through at a time.
func TestProcessesShareASequence(t *testing.T) {
	forEachStrategy(t, processesShareASequence)
}

func processesShareASequence(t *testing.T, st sequence.Strategy) {
	env := strategyEnv(t, st)
	const procs, each = 3, 2000
	db := srv.PooledDatabase(t)
	outs := make([][]byte, procs)
	var wg sync.WaitGroup
	for i := range procs {
		cmd := child(t, db, "print", each, env...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			outs[i], err = cmd.Output()
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	var all []int64
	for _, out := range outs {
		for _, line := range strings.Fields(string(out)) {
			v, err := strconv.ParseInt(line, 10, 64)
			require.NoError(t, err)
			all = append(all, v)
		}
	}
	requireDistinct(t, all, procs*each)
}

// TestKilledProcess kills a writer with SIGKILL mid-run, twice, and lets a
// fresh one finish: no number is used twice, and each killed process loses
// at most the one block it held (25 numbers; growth is off). Atomic runs
// through the proxy on FerretDB, as above.
func TestKilledProcess(t *testing.T) {
	forEachStrategy(t, killedProcess)
}

func killedProcess(t *testing.T, st sequence.Strategy) {
	env := strategyEnv(t, st)
	const total, block, kills = 600, 25, 2
	ctx := context.Background()
	db := srv.PooledDatabase(t)
	coll := db.Collection("taken")
	for k := range kills {
		cmd := child(t, db, "insert", total, env...)
		require.NoError(t, cmd.Start())
		target := int64((k + 1) * total / (kills + 2))
		deadline := time.Now().Add(60 * time.Second)
		for {
			c, err := coll.CountDocuments(ctx, bson.M{})
			require.NoError(t, err)
			if c >= target {
				break
			}
			require.True(t, time.Now().Before(deadline), "writer stalled at %d documents", c)
			time.Sleep(5 * time.Millisecond)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
	}
	require.NoError(t, child(t, db, "insert", total, env...).Run())

	cur, err := coll.Find(ctx, bson.M{})
	require.NoError(t, err)
	var docs []struct{ N int64 }
	require.NoError(t, cur.All(ctx, &docs))
	var nums []int64
	for _, d := range docs {
		nums = append(nums, d.N)
	}
	requireDistinct(t, nums, len(nums))
	require.GreaterOrEqual(t, len(nums), total)
	top := slices.Max(nums)
	missing := top - int64(len(nums))
	t.Logf("%d documents, largest number %d, %d numbers lost to %d kills", len(nums), top, missing, kills)
	assert.LessOrEqual(t, missing, int64(kills*block), "a killed process loses at most one block")
}
