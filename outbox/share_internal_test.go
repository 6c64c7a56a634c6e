package outbox

import (
	"fmt"
	"math"
	"testing"
)

// TestOwnerSpreadsAndKeeps: rendezvous hashing gives each document to
// one relay, about evenly, and a relay that leaves moves only its own
// documents: every other stays with its relay.
func TestOwnerSpreadsAndKeeps(t *testing.T) {
	three := []string{"5c0f…a", "9e21…b", "d403…c"}
	two := []string{three[0], three[2]}
	counts := map[string]int{}
	const n = 3000
	for i := range n {
		key := fmt.Sprintf("6:orders|o:%024x", i)
		o := owner(key, three)
		counts[o]++
		if o != three[1] {
			if got := owner(key, two); got != o {
				t.Fatalf("%s moved from %s to %s when %s left", key, o, got, three[1])
			}
		}
	}
	for _, m := range three {
		if c := counts[m]; c < n/3*8/10 || c > n/3*12/10 {
			t.Errorf("%s owns %d of %d documents, want about a third: %v", m, c, n, counts)
		}
	}
	if got := owner("k", nil); got != "" {
		t.Errorf("owner among no relays = %q, want none", got)
	}
}

// TestReadLimitNeverOverflows: the read limit stays in [1, maxRead] for
// any batch and any count of relays, the stored ones included.
func TestReadLimitNeverOverflows(t *testing.T) {
	for _, c := range []struct{ batch, members, want int }{
		{100, 1, 100}, {100, 3, 300}, {100, 20, maxRead}, {1, 1, 1},
		{math.MaxInt, 2, maxRead}, {1 << 62, 4, maxRead}, {math.MaxInt, math.MaxInt, maxRead},
	} {
		if got := readLimit(c.batch, c.members); got != c.want {
			t.Errorf("readLimit(%d, %d) = %d, want %d", c.batch, c.members, got, c.want)
		}
	}
}
