package events_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type essential struct{ events.Listener }

func (essential) Essential() {}

// TestQuietRunsEssentialsInTheirPlace: with events off, an essential
// listener runs, in its place among the others (before the policies on a
// Before* event, after them on an After* event), and a plain one does not.
func TestQuietRunsEssentialsInTheirPlace(t *testing.T) {
	bus := events.NewBus()
	var log []string
	bus.Register(record(&log, "policy"), events.AsPolicy())
	bus.Register(essential{record(&log, "essential")})
	bus.Register(record(&log, "plain"))
	ctx := context.Background()
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.BeforeSave, Quiet: true}))
	require.NoError(t, bus.Publish(ctx, &events.Event{Type: events.AfterSave, Quiet: true}))
	assert.Equal(t, []string{"essential:BeforeSave", "policy:BeforeSave", "policy:AfterSave", "essential:AfterSave"}, log)
}
