//go:build race

package outbox_test

// raceEnabled: the race detector slows a relay several times, past the
// leases that timing tests set; CI runs those tests without it, apart.
const raceEnabled = true
