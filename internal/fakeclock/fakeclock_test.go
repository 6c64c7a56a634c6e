package fakeclock

import (
	"slices"
	"testing"
	"time"
)

// TestTimersFireInOrderWhenAdvanced: timers fire only once the clock
// reaches them, in the order of their times; a stopped one never does.
func TestTimersFireInOrderWhenAdvanced(t *testing.T) {
	start := time.Unix(1000, 0)
	c := New(start)
	var fired []int
	c.AfterFunc(2*time.Second, func() { fired = append(fired, 2) })
	c.AfterFunc(time.Second, func() { fired = append(fired, 1) })
	stop := c.AfterFunc(1500*time.Millisecond, func() { fired = append(fired, 3) })
	if !stop() || stop() {
		t.Fatal("stop reports true once, for a timer that waits")
	}
	c.Advance(999 * time.Millisecond)
	if len(fired) != 0 {
		t.Fatalf("fired early: %v", fired)
	}
	c.Advance(1001 * time.Millisecond)
	if !slices.Equal(fired, []int{1, 2}) || c.Timers() != 0 {
		t.Fatalf("fired %v, %d timers left", fired, c.Timers())
	}
	if got := c.Now(); !got.Equal(start.Add(2 * time.Second)) {
		t.Fatalf("Now %v", got)
	}
	c.AfterFunc(time.Minute, func() { fired = append(fired, 4) })
	if !c.Next() || c.Next() || !slices.Equal(fired, []int{1, 2, 4}) {
		t.Fatalf("Next: fired %v", fired)
	}
}
