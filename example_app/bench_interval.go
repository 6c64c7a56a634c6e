package main

import (
	"math/rand/v2"
	"slices"
)

// interval is the spread of a figure's median: a percentile bootstrap 95%
// interval from the per-round ratios, so that a reader can tell a real
// miss of a goal from the machine's noise.
type interval struct {
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	Rounds int     `json:"rounds"` // the per-round ratios it was drawn from
}

// The bootstrap's settings: enough resamples for the 2.5th and 97.5th
// percentiles to settle, and a fixed seed, so that the same rounds give the
// same interval on every run.
const (
	bootResamples = 2000
	bootLevel     = 0.95
	bootSeed      = 0x6d676d // "mgm"
)

// medianInterval returns the percentile bootstrap interval of the median
// of xs at bootLevel: it draws bootResamples samples of len(xs) values
// from xs with replacement, takes the median of each (the middle value, or
// the mean of the two middle ones, as ratio does), and returns the
// percentiles of those medians that leave (1-bootLevel)/2 of them on each
// side. It depends on the values of xs only, not on their order. It
// returns nil for an empty xs.
func medianInterval(xs []float64) *interval {
	n := len(xs)
	if n == 0 {
		return nil
	}
	sorted := slices.Sorted(slices.Values(xs))
	rng := rand.New(rand.NewPCG(bootSeed, uint64(n)))
	counts := make([]int, n)
	meds := make([]float64, bootResamples)
	for b := range meds {
		clear(counts)
		for range n {
			counts[rng.IntN(n)]++
		}
		meds[b] = (nth(sorted, counts, (n-1)/2) + nth(sorted, counts, n/2)) / 2
	}
	slices.Sort(meds)
	k := int(float64(bootResamples) * (1 - bootLevel) / 2)
	return &interval{Lo: meds[k], Hi: meds[bootResamples-1-k], Rounds: n}
}

// nth returns the value of rank r (from 0) in the resample that holds
// counts[i] copies of sorted[i].
func nth(sorted []float64, counts []int, r int) float64 {
	for i, c := range counts {
		if r < c {
			return sorted[i]
		}
		r -= c
	}
	return sorted[len(sorted)-1]
}
