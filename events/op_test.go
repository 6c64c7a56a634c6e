package events_test

import (
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
)

// TestOpInsert: Insert is true for both operations that insert every model
// they write, InsertMany included, which e.Op == OpInsert misses, and for
// no operation that inserts only when an upsert matches nothing.
func TestOpInsert(t *testing.T) {
	var inserts []events.Op
	for o := events.OpInsert; o <= events.OpWatch; o++ {
		if o.Insert() {
			inserts = append(inserts, o)
		}
	}
	assert.Equal(t, []events.Op{events.OpInsert, events.OpInsertMany}, inserts)
	assert.False(t, events.Op(0).Insert(), "the zero Op of a Save not yet decided")
}
