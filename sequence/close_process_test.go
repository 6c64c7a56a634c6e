package sequence_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/sequence"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
)

// taken returns the numbers the children inserted into "taken", sorted.
func taken(t *testing.T, db *mongo.Database) []int64 {
	t.Helper()
	ctx := context.Background()
	cur, err := db.Collection("taken").Find(ctx, bson.M{})
	require.NoError(t, err)
	var docs []struct{ N int64 }
	require.NoError(t, cur.All(ctx, &docs))
	nums := make([]int64, 0, len(docs))
	for _, d := range docs {
		nums = append(nums, d.N)
	}
	slices.Sort(nums)
	return nums
}

// TestProcessesInTurnCloseWithoutGaps runs three OS processes one after the
// other, each taking 10 numbers (blocks of 25) and closing: together they
// get exactly 1..30. Without Close (shown once, with Claim) each loses the
// rest of its block. The processes do not overlap, so Atomic runs on the
// embedded server too: each has its own connection, but never at the same
// time as another.
func TestProcessesInTurnCloseWithoutGaps(t *testing.T) {
	forEachStrategy(t, func(t *testing.T, st sequence.Strategy) {
		for _, c := range []struct {
			name  string
			close bool
			top   int64
		}{{"closed", true, 30}, {"killed", false, 60}} {
			if !c.close && st == sequence.Atomic {
				continue // the same as with Claim, and child processes are slow under -race
			}
			t.Run(c.name, func(t *testing.T) {
				db := srv.Database(t)
				env := []string{"CHILD_STRATEGY=" + strconv.Itoa(int(st))}
				if c.close {
					env = append(env, "CHILD_CLOSE=1")
				}
				for range 3 {
					require.NoError(t, child(t, db, "take", 10, env...).Run())
				}
				nums := taken(t, db)
				requireDistinct(t, nums, 30)
				if c.close {
					want := make([]int64, 30)
					for i := range want {
						want[i] = int64(i + 1)
					}
					assert.Equal(t, want, nums, "each process gave back the 15 it did not use")
				} else {
					assert.Equal(t, c.top, nums[29], "each process lost 15 numbers")
				}
			})
		}
	})
}

// TestGapWithAndWithoutClose is the measurement: four writer
// processes, with the default block sizes (batch 100, growth 16), each
// insert `each` documents while a fifth is killed with SIGKILL half way;
// the gap is the largest number minus the documents. It runs once with the
// writers exiting without Close and once with Close. Only the writer
// holding the newest reservation can give numbers back, so the gap after
// is the killed writer's blocks and the tails of the writers that were
// overtaken. MGMEVENTS_GAP_EACH sets each (default 100).
func TestGapWithAndWithoutClose(t *testing.T) {
	each := 100
	if v, err := strconv.Atoi(os.Getenv("MGMEVENTS_GAP_EACH")); err == nil && v > 0 {
		each = v
	}
	gaps := map[bool]int64{}
	for _, closing := range []bool{false, true} {
		db := srv.Database(t)
		env := []string{"CHILD_DEFAULTS=1"}
		if closing {
			env = append(env, "CHILD_CLOSE=1")
		}
		victim := child(t, db, "take", 1<<30, env...)
		require.NoError(t, victim.Start())
		var wg sync.WaitGroup
		for range 4 {
			cmd := child(t, db, "take", each, env...)
			wg.Add(1)
			go func() { defer wg.Done(); assert.NoError(t, cmd.Run()) }()
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			n, err := db.Collection("taken").EstimatedDocumentCount(context.Background())
			require.NoError(t, err)
			if n >= int64(2*each) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
		_ = victim.Wait()
		wg.Wait()
		nums := taken(t, db)
		requireDistinct(t, nums, len(nums))
		top := nums[len(nums)-1]
		gaps[closing] = top - int64(len(nums))
		t.Logf("Close=%v: %d documents, largest number %d, gap %d", closing, len(nums), top, gaps[closing])
	}
}
