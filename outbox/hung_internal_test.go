package outbox

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// ctxPub returns as soon as its context ends, as a Publisher should.
type ctxPub struct{}

func (ctxPub) Publish(ctx context.Context, _ Message) error { <-ctx.Done(); return ctx.Err() }

// TestHungNeverNegative: publishes whose deadline ends as their Publish
// returns race the relay's give-up with the Publish's return; whichever
// wins, Stats().Hung and the running count never go below zero, and both
// are back at zero once every Publish returned.
func TestHungNeverNegative(t *testing.T) {
	r := &Relay{pub: ctxPub{}, cfg: relayConfig{maxHung: MaxHungPublishes, clock: systemClock{}}}
	var low atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			low.Store(min(low.Load(), r.Stats().Hung, r.running.Load()))
			runtime.Gosched()
		}
	}()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && low.Load() >= 0; {
		if _, ok := r.startPublish(); ok {
			_ = r.publish(context.Background(), Message{}, time.Now().Add(20*time.Microsecond))
		}
	}
	close(stop)
	<-watched
	if low.Load() < 0 {
		t.Errorf("a count went below zero: %d", low.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for (r.Stats().Hung != 0 || r.running.Load() != 0) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if h, n := r.Stats().Hung, r.running.Load(); h != 0 || n != 0 {
		t.Errorf("once every Publish returned: Hung %d, running %d", h, n)
	}
}
