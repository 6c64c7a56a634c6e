//go:build race

package model_test

// raceEnabled: the race detector changes what allocates, so allocation
// counts are asserted only without it (CI runs them so, apart).
const raceEnabled = true
