package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// variant is one way of doing an operation, timed op by op and round by
// round.
type variant struct {
	name    string
	op      func(ctx context.Context, i int) error
	workers int // goroutines running op at once; 0 or 1 runs it inline
	rounds  []round
	n       int
}

type round struct {
	dur time.Duration
	lat []time.Duration
}

// run times one round: n operations, or n on each of v.workers goroutines.
func (v *variant) run(ctx context.Context, n int) error {
	w := max(v.workers, 1)
	lat := make([]time.Duration, w*n)
	work := func(g int) error {
		for i := range n {
			k := g*n + i
			t0 := time.Now()
			if err := v.op(ctx, v.n+k); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			lat[k] = time.Since(t0)
		}
		return nil
	}
	start := time.Now()
	var err error
	if w == 1 {
		err = work(0)
	} else {
		errs := make([]error, w)
		var wg sync.WaitGroup
		for g := range w {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[g] = work(g)
			}()
		}
		wg.Wait()
		err = errors.Join(errs...)
	}
	if err != nil {
		return err
	}
	v.rounds = append(v.rounds, round{dur: time.Since(start), lat: lat})
	v.n += w * n
	return nil
}

func (v *variant) perSec() float64 {
	var d time.Duration
	for _, r := range v.rounds {
		d += r.dur
	}
	return float64(v.n) / d.Seconds()
}

// p99 is the 99th percentile of every latency of v, all rounds pooled.
func (v *variant) p99() time.Duration {
	var all []time.Duration
	for _, r := range v.rounds {
		all = append(all, r.lat...)
	}
	slices.Sort(all)
	return all[len(all)*99/100]
}

// ratio compares a with b round by round (they ran side by side) and
// returns the median ratio, with the smallest and largest, so that one
// round disturbed by the machine does not decide the figure, and the
// bootstrap interval of the median (see medianInterval). f gives a round's
// value.
func ratio(a, b *variant, f func(round) float64) (med, lo, hi float64, ci *interval) {
	rs := make([]float64, len(a.rounds))
	for i := range rs {
		rs[i] = f(a.rounds[i]) / f(b.rounds[i])
	}
	ci = medianInterval(rs)
	slices.Sort(rs)
	m := len(rs) / 2
	med = rs[m]
	if len(rs)%2 == 0 {
		med = (rs[m-1] + rs[m]) / 2
	}
	return med, rs[0], rs[len(rs)-1], ci
}

func throughput(r round) float64 { return float64(len(r.lat)) / r.dur.Seconds() }

// throughputRatio is the figure of lib against its raw twin: the median
// of the per-round throughput ratios, its bootstrap interval, and the
// rounds' spread for the report.
func throughputRatio(lib, raw *variant) (float64, *interval, string) {
	med, lo, hi, ci := ratio(lib, raw, throughput)
	return med, ci, spread(lo, hi)
}

func spread(lo, hi float64) string { return fmt.Sprintf("rounds %.2f–%.2f", lo, hi) }

// progress shows a person that the bench is alive: one line per phase,
// with the rounds done out of the total. On a terminal the line is
// rewritten in place as rounds finish; elsewhere (a log) it is written
// once, when the phase ends.
type progress struct {
	w            io.Writer
	live         bool
	name, unit   string
	done, total  int
	began, shown time.Time
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	live := false
	if ok {
		if st, err := f.Stat(); err == nil {
			live = st.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progress{w: w, live: live}
}

func (p *progress) begin(name string, total int, unit string) {
	p.name, p.unit, p.done, p.total, p.began = name, unit, 0, total, time.Now()
	if p.live {
		p.show()
	}
}

func (p *progress) step() {
	p.done++
	if p.live && time.Since(p.shown) >= 100*time.Millisecond {
		p.show()
	}
}

func (p *progress) end() {
	if p.live {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "%s, %.1f s\n", p.line(), time.Since(p.began).Seconds())
}

func (p *progress) show() {
	fmt.Fprintf(p.w, "\r\033[K%s", p.line())
	p.shown = time.Now()
}

func (p *progress) line() string {
	return fmt.Sprintf("bench: %s %d/%d %s", p.name, p.done, p.total, p.unit)
}
