package sequence

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Sequence is one named sequence. Its Next is lock-free while the current
// block lasts. Get one from Allocator.Sequence.
type Sequence struct {
	a     *Allocator
	name  string
	start int64 // first number
	base  int64 // configured block size
	max   int64 // largest adaptive block size

	cur     atomic.Pointer[block]
	checked atomic.Bool // Atomic: claims were looked for, and moved past (see handover.go)
	adopted atomic.Bool // Claim: this process shut Atomic out and fenced old claims

	mu        sync.Mutex // guards the fields below
	pending   *block     // next block, fetched ahead
	inflight  *fetchOp   // the running fetch, if any
	size      int64      // current adaptive block size
	lastFetch time.Time  // when the last fetch started
	gen       uint64     // bumped when cached blocks are thrown away
	own       mark       // the newest reservation made here
	closed    bool       // Close was called: no more numbers
	handed    int64      // numbers handed out from blocks no longer current

	givenBack, reserved, blocks, roundTrips atomic.Int64 // see Stats
}

// block is the numbers [next, end) not yet handed out. When the value at
// trigger is handed out, the next block is fetched in the background. ver
// is the claim version that reserved it (Claim only).
type block struct {
	next    atomic.Int64
	start   int64
	end     int64
	trigger int64
	ver     int64
}

type fetchOp struct {
	done chan struct{}
	err  error
}

func newSequence(a *Allocator, name string, c config) *Sequence {
	s := &Sequence{a: a, name: name, start: c.start, base: c.batch, size: c.batch}
	s.max = c.batch
	if c.batch > 1 && a.cfg.maxFactor > 1 {
		s.max = min(c.batch*a.cfg.maxFactor, math.MaxInt64/4)
	}
	s.own = mark{end: c.start - 1}
	return s
}

// Name returns the sequence's name.
func (s *Sequence) Name() string { return s.name }

// Start returns the sequence's first number.
func (s *Sequence) Start() int64 { return s.start }

// Batch returns the configured block size.
func (s *Sequence) Batch() int64 { return s.base }

// MaxBlock returns the largest block this process may reserve at once for
// Next, which bounds the numbers lost if the process dies.
func (s *Sequence) MaxBlock() int64 { return s.max }

// Next returns the next number. While the current block lasts it costs one
// atomic add and no allocation; otherwise it waits for the block being
// fetched, or fetches one, honouring ctx while it waits.
func (s *Sequence) Next(ctx context.Context) (int64, error) {
	if b := s.cur.Load(); b != nil {
		if v := b.next.Add(1) - 1; v < b.end {
			if v == b.trigger {
				s.prefetch(b.end - v)
			}
			return v, nil
		}
	}
	var one [1]int64
	err := s.fill(ctx, one[:])
	return one[0], err
}

// NextN fills dst with the next len(dst) numbers, in increasing order. What
// the cached blocks cannot cover is reserved with a single round trip, so an
// InsertMany of any size pays at most one.
func (s *Sequence) NextN(ctx context.Context, dst []int64) error {
	if len(dst) == 0 {
		return nil
	}
	return s.fill(ctx, dst)
}

// PutBack hands n back to s, so that the next Next returns it again, when
// n is the number s handed out last from its current block and no number
// was handed out after it; it reports whether it did. Call it only for a
// number that is stored nowhere and never will be, such as the key of an
// upsert that matched a document instead of inserting one. It never
// breaks the increasing order within a process, and with batch 1 it does
// nothing, to keep the strict order across processes. A number not put
// back is a gap, as before.
func (s *Sequence) PutBack(n int64) bool {
	b := s.cur.Load()
	if s.base <= 1 || b == nil || n < b.start || n >= b.end {
		return false
	}
	return b.next.CompareAndSwap(n+1, n)
}

// fill is the slow path: it takes from the current and the pending block,
// and fetches what they lack.
func (s *Sequence) fill(ctx context.Context, dst []int64) error {
	n := 0
	for {
		if b := s.cur.Load(); b != nil {
			n += s.takeFrom(b, dst[n:])
		}
		if n == len(dst) {
			return nil
		}
		s.mu.Lock()
		if s.closed || s.a.closed.Load() {
			s.mu.Unlock()
			return fmt.Errorf("sequence %q: %w", s.name, ErrClosed)
		}
		if b := s.cur.Load(); b != nil && b.next.Load() < b.end {
			s.mu.Unlock()
			continue
		}
		if s.pending != nil {
			if b := s.cur.Load(); b != nil {
				s.retireLocked(b) // used up: the check above saw it
			}
			s.cur.Store(s.pending)
			s.pending = nil
			s.mu.Unlock()
			continue
		}
		op, mine := s.inflight, false
		if op == nil {
			op, mine = s.startFetchLocked(max(int64(len(dst)-n), s.adaptLocked())), true
		}
		s.mu.Unlock()
		select {
		case <-op.done:
			// A failed prefetch is retried by a fetch of our own.
			if op.err != nil && mine {
				return op.err
			}
		case <-ctx.Done():
			return fmt.Errorf("sequence %q: waiting for a block: %w", s.name, ctx.Err())
		}
	}
}

// takeFrom takes up to len(dst) numbers from b without a lock.
func (s *Sequence) takeFrom(b *block, dst []int64) int {
	k := int64(len(dst))
	old := b.next.Add(k) - k
	if old >= b.end {
		return 0
	}
	got := min(k, b.end-old)
	for i := range got {
		dst[i] = old + i
	}
	// Prefetch only when this take is served in full: otherwise the caller
	// fetches the shortfall itself, in one round trip.
	if got == k && b.trigger >= old && b.trigger < old+got {
		s.prefetch(b.end - b.trigger)
	}
	return int(got)
}

// prefetch starts fetching the next block, sized so that the numbers
// reserved and not yet handed out never exceed one block: remaining were
// left in the current block when the trigger value was handed out.
func (s *Sequence) prefetch(remaining int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight != nil || s.pending != nil || s.closed {
		return
	}
	size := s.adaptLocked()
	if n := size - remaining; n > 0 {
		s.startFetchLocked(n)
	}
}

// adaptLocked grows the block size when blocks last under a second and
// shrinks it when they last over a minute, within [batch, max].
func (s *Sequence) adaptLocked() int64 {
	if s.max > s.base && !s.lastFetch.IsZero() {
		switch since := time.Since(s.lastFetch); {
		case since < time.Second && s.size < s.max:
			s.size = min(s.size*2, s.max)
		case since > time.Minute && s.size > s.base:
			s.size = max(s.size/2, s.base)
		}
	}
	return s.size
}

// startFetchLocked reserves n numbers in the background. The result becomes
// the pending block unless the cache was invalidated meanwhile.
func (s *Sequence) startFetchLocked(n int64) *fetchOp {
	op := &fetchOp{done: make(chan struct{})}
	s.inflight = op
	s.lastFetch = time.Now()
	gen, own := s.gen, s.own
	go func() {
		ctx, cancel := s.a.detach()
		m, err := s.reserve(ctx, own, n)
		cancel()
		s.mu.Lock()
		if s.inflight == op { // invalidate may have started another since
			s.inflight = nil
		}
		if err != nil {
			op.err = fmt.Errorf("sequence %q: reserving %d numbers: %w", s.name, n, err)
			s.a.cfg.logger.Warn("sequence: reserving a block failed", "sequence", s.name, "size", n, "err", err)
		} else {
			s.blocks.Add(1)
			s.reserved.Add(n)
		}
		if err == nil && gen == s.gen { // else the block is lost, like a dead process's
			if m.newer(s.own) {
				s.own = m
			}
			b := &block{start: m.end - n + 1, end: m.end + 1, ver: m.ver}
			b.next.Store(b.start)
			b.trigger = b.end - max(1, (n+9)/10)
			if n > s.size {
				// A bulk shortfall: its caller takes it all at once, and
				// prefetching after it would cost a round trip nobody asked for.
				b.trigger = -1
			}
			s.pending = b
		}
		s.mu.Unlock()
		close(op.done)
	}()
	return op
}

func (s *Sequence) reserve(ctx context.Context, own mark, n int64) (mark, error) {
	st, err := s.a.getStore(ctx)
	if err != nil {
		return mark{}, err
	}
	return st.reserve(ctx, s, own, n)
}

// invalidate throws away the cached blocks, and any block being fetched, so
// that the next number comes from a fresh reservation.
func (s *Sequence) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.invalidateLocked()
}

func (s *Sequence) invalidateLocked() {
	s.gen++
	s.pending = nil
	if b := s.cur.Load(); b != nil {
		s.retireLocked(b)
		s.cur.Store(nil)
	}
	s.inflight = nil
}
