package sequence

// Stats are the counters of an allocator, or of one of its sequences, for
// a metrics listener to read. Every field only grows. What was reserved
// and is neither handed out, given back nor still cached was lost: the
// rest of a block dropped by AdvancePast or SetNext, or of one the server
// refused back at Close because someone reserved after it.
type Stats struct {
	// HandedOut is the numbers Next and NextN returned.
	HandedOut int64
	// GivenBack is the numbers Close returned to the server, which hands
	// them out again.
	GivenBack int64
	// Reserved is the numbers reserved on the server, in Blocks blocks.
	Reserved int64
	// Blocks is the blocks fetched: one reservation each.
	Blocks int64
	// RoundTrips is the counter round trips that reservations, admin
	// moves, Current, give-backs and a strategy's one-time checks waited
	// for. The Claim strategy's pruning, in the background, is not counted.
	RoundTrips int64
}

func (t *Stats) add(o Stats) {
	t.HandedOut += o.HandedOut
	t.GivenBack += o.GivenBack
	t.Reserved += o.Reserved
	t.Blocks += o.Blocks
	t.RoundTrips += o.RoundTrips
}

// Stats returns the counters of every sequence of a.
func (a *Allocator) Stats() Stats {
	var t Stats
	a.seqs.Range(func(_, v any) bool {
		t.add(v.(*Sequence).Stats())
		return true
	})
	return t
}

// Stats returns the counters of s in this allocator.
func (s *Sequence) Stats() Stats {
	s.mu.Lock()
	handed := s.handed
	if b := s.cur.Load(); b != nil {
		handed += min(b.next.Load(), b.end) - b.start
	}
	s.mu.Unlock()
	return Stats{
		HandedOut:  handed,
		GivenBack:  s.givenBack.Load(),
		Reserved:   s.reserved.Load(),
		Blocks:     s.blocks.Load(),
		RoundTrips: s.roundTrips.Load(),
	}
}

// retireLocked stops b handing out numbers and counts those it did: a
// Next racing with this gets a number only if its add came first, and the
// swap then counts it. It returns where b's unused numbers start (b.end
// or more when none are left).
func (s *Sequence) retireLocked(b *block) int64 {
	used := b.next.Swap(b.end)
	s.handed += min(used, b.end) - b.start
	return used
}
