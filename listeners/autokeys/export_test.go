package autokeys

import "reflect"

// CachedSequences returns how many dated or tenant-scoped sequences
// Keys holds for model type t, all fields together.
func CachedSequences(k *Keys, t reflect.Type) int64 {
	p, ok := k.plans.Load(t)
	if !ok {
		return 0
	}
	var n int64
	for _, f := range p.(*plan).fields {
		n += f.periods.len()
	}
	return n
}

// SetMaxCachedSequences sets the bound of the cache of sequences, and
// returns a function that restores it.
func SetMaxCachedSequences(n int64) (restore func()) {
	old := maxCachedSequences
	maxCachedSequences = n
	return func() { maxCachedSequences = old }
}
