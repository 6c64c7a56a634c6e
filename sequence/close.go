package sequence

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotGivenBack is wrapped by the error of a Close that could not give
// back every number it held: the context ended, or the server failed. The
// error names each sequence and the numbers it lost. Lost numbers are a
// gap, as if the process had died: they are never handed out, by this
// allocator or another, so losing them never makes a duplicate.
var ErrNotGivenBack = errors.New("sequence: numbers not given back")

// Close gives back the numbers this allocator reserved and has not handed
// out, so that the next process continues without a gap, and waits for its
// background writes. For each sequence, the unused tail of the current
// block, and the block fetched ahead if it follows on, are returned when
// this allocator made the newest reservation of the sequence; when anyone
// reserved after it, nothing is given back, so nothing is ever handed out
// twice. That is no error: those numbers are lost, a gap.
//
// After Close, Next and NextN return ErrClosed, wrapped with the
// sequence's name. Close is safe to call concurrently with Next, and more
// than once: every call returns what the first returned. If ctx ends
// first, or the server fails, the numbers not yet given back are lost,
// and the error wraps ErrNotGivenBack (and ctx's error), naming them.
func (a *Allocator) Close(ctx context.Context) error {
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	if a.closed.Swap(true) {
		return a.closeErr
	}
	var errs []error
	a.seqs.Range(func(_, v any) bool {
		if err := v.(*Sequence).close(ctx); err != nil {
			errs = append(errs, err)
		}
		return true
	})
	a.bgMu.Lock()
	a.bgDone = true
	a.bgMu.Unlock()
	done := make(chan struct{})
	go func() { a.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("sequence: Close: waiting for background writes: %w", ctx.Err()))
	}
	a.closeErr = errors.Join(errs...)
	return a.closeErr
}

// close stops s handing out numbers and gives back what it holds.
func (s *Sequence) close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	op := s.inflight
	s.mu.Unlock()
	if op != nil {
		// A block being reserved now is the newest: wait, to give it back.
		select {
		case <-op.done:
		case <-ctx.Done():
			return fmt.Errorf("sequence %q: Close: waiting for the block being reserved: it and the rest of the current block are lost: %w: %w", s.name, ErrNotGivenBack, ctx.Err())
		}
	}
	s.mu.Lock()
	cur, pend := s.cur.Load(), s.pending
	s.pending = nil
	s.gen++
	used := int64(0)
	if cur != nil {
		used = s.retireLocked(cur) // see retireLocked for a racing Next
		s.cur.Store(nil)
	}
	s.mu.Unlock()

	var last *block
	from := int64(0)
	if cur != nil && used < cur.end {
		last, from = cur, used
	}
	if pend != nil {
		lo := pend.next.Load() // nobody takes from a pending block
		if last == nil || last.end != lo || (pend.ver != 0 && pend.ver != last.ver+1) {
			from = lo // the current block's tail is not next to it
		}
		last = pend
	}
	if last == nil {
		return nil
	}
	st, err := s.a.getStore(ctx)
	if err == nil {
		var back bool
		if back, err = st.giveBack(ctx, s, mark{end: last.end - 1, ver: last.ver}, from); err == nil {
			s.noteClosed(back, from, last.end)
			return nil
		}
	}
	return fmt.Errorf("sequence %q: Close: %d..%d not given back (or the reply was lost): count them as a gap, which no allocator hands out: %w: %w", s.name, from, last.end-1, ErrNotGivenBack, err)
}

// noteClosed counts and logs what close gave back: from..end-1, when back.
func (s *Sequence) noteClosed(back bool, from, end int64) {
	if back {
		s.givenBack.Add(end - from)
	}
	s.a.cfg.logger.Debug("sequence: closed", "sequence", s.name, "from", from, "to", end-1, "given back", back)
}
