package policy_test

import (
	"errors"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/stretchr/testify/assert"
)

// TestRefuseAdded: an application's policy refuses what a listener adds
// to a write of its field, by a $set or by a $rename's target, and lets
// other additions through, as the built-in policies do.
func TestRefuseAdded(t *testing.T) {
	for name, c := range map[string]struct {
		add  func(e *events.Event)
		want error
	}{
		"$set":           {func(e *events.Event) { e.AddExtra("$set", "region", "us") }, ErrElsewhere},
		"$rename target": {func(e *events.Event) { e.AddExtra("$rename", "_x", "region") }, ErrElsewhere},
		"a part":         {func(e *events.Event) { e.AddTombstone("$set", "region.code", "us") }, ErrElsewhere},
		"unreadable":     {func(e *events.Event) { e.AddExtra("$set", "_x", make(chan int)) }, events.ErrUnguardedQuery},
		"another field":  {func(e *events.Event) { e.AddExtra("$set", "_x", 1) }, nil},
	} {
		t.Run(name, func(t *testing.T) {
			e := &events.Event{Type: events.BeforeDelete, Op: events.OpDelete}
			c.add(e)
			err := policy.RefuseAdded(e, ErrElsewhere, "the region field", "region")
			if c.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.True(t, errors.Is(err, c.want), "%v", err)
		})
	}
}
