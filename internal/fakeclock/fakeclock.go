// Package fakeclock is a clock that moves only when a test says, for the
// tests of the outbox's relay and what reads it (an outbox.Clock): leases,
// backoffs, publish deadlines and polls run on it instead of on the
// system's time, so that no test sleeps against them.
package fakeclock

import (
	"slices"
	"sync"
	"time"
)

// Clock is a fake clock. Its zero value is not usable; call New.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	added  chan struct{} // receives, without blocking, when a timer is added
}

type timer struct {
	at time.Time
	f  func()
}

// New returns a clock that reads start until it is advanced.
func New(start time.Time) *Clock {
	return &Clock{now: start, added: make(chan struct{}, 1)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f once the clock has been advanced by d, from the
// Advance that gets it there; with d <= 0, it calls f at once in its own
// goroutine, as time.AfterFunc does. stop cancels the call and reports
// whether it did.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	if d <= 0 {
		go f()
		return func() bool { return false }
	}
	c.mu.Lock()
	t := &timer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	select {
	case c.added <- struct{}{}:
	default:
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.timers, t)
		if i < 0 {
			return false
		}
		c.timers = slices.Delete(c.timers, i, i+1)
		return true
	}
}

// Advance moves the clock d forward and calls, in the order of their
// times, the functions of the timers that are due, each with the clock
// at its time or later.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	c.timers = slices.DeleteFunc(c.timers, func(t *timer) bool {
		if t.at.After(c.now) {
			return false
		}
		due = append(due, t)
		return true
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *timer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// Timers returns how many timers wait for the clock.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Added receives when a timer was added since the last receive.
func (c *Clock) Added() <-chan struct{} { return c.added }

// Next advances the clock to the earliest timer's time and calls what is
// due then; it reports false, and does nothing, when no timer waits.
func (c *Clock) Next() bool {
	c.mu.Lock()
	if len(c.timers) == 0 {
		c.mu.Unlock()
		return false
	}
	at := c.timers[0].at
	for _, t := range c.timers[1:] {
		if t.at.Before(at) {
			at = t.at
		}
	}
	d := at.Sub(c.now)
	c.mu.Unlock()
	c.Advance(max(d, 0))
	return true
}

// Drive lets time pass as the code under test waits: each time a timer is
// added, it advances the clock to each waiting timer in turn (see Next),
// until stop is called; stop waits for the last Advance to return.
func (c *Clock) Drive() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-c.added:
				if !c.runDown(quit) {
					return
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// runDown advances the clock to each waiting timer in turn (see Next). It
// returns false, and stops, when quit closes first.
func (c *Clock) runDown(quit <-chan struct{}) bool {
	for c.Next() {
		select {
		case <-quit:
			return false
		default:
		}
	}
	return true
}
