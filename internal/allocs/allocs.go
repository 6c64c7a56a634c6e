// Package allocs measures what a call allocates, for the tests that keep
// the library's allocation budgets against the raw driver and mgm. The
// counts are process-wide, so they include what the embedded server
// allocates to serve the call; a budget compares two calls that the server
// serves alike. The race detector changes what allocates: the tests that
// use this package build with the !race tag.
package allocs

import (
	"math"
	"runtime"
	"slices"
)

// Cost is what one call allocates.
type Cost struct {
	Allocs float64 // objects
	Bytes  float64
}

// Over returns how many allocations, and how many bytes, c costs more than
// base per item, for calls of items items each (1 for a call of one
// document, the batch size for a bulk write). The allocations are rounded
// to whole ones.
func (c Cost) Over(base Cost, items int) (allocs, bytes float64) {
	n := float64(items)
	return math.Round((c.Allocs - base.Allocs) / n), (c.Bytes - base.Bytes) / n
}

// PerCall returns the cost of each of fs: the median of n calls (with i
// from 0 to n-1), each measured alone, the functions taking turns. The
// median leaves out what other goroutines allocate now and then (the
// server's housekeeping, the driver's monitors) and what the server's
// storage allocates on some calls only, as it grows. Each function is
// called once before it is measured, to warm caches and connections.
func PerCall(n int, fs ...func(i int)) []Cost {
	for _, f := range fs {
		f(0)
	}
	objs := make([][]float64, len(fs))
	bytes := make([][]float64, len(fs))
	var before, after runtime.MemStats
	for i := range n {
		for k, f := range fs {
			runtime.ReadMemStats(&before)
			f(i)
			runtime.ReadMemStats(&after)
			objs[k] = append(objs[k], float64(after.Mallocs-before.Mallocs))
			bytes[k] = append(bytes[k], float64(after.TotalAlloc-before.TotalAlloc))
		}
	}
	out := make([]Cost, len(fs))
	for k := range fs {
		out[k] = Cost{median(objs[k]), median(bytes[k])}
	}
	return out
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}
