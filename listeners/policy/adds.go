package policy

import (
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/guard"
)

// RefuseAdded returns an error wrapping refusal when what the listeners
// added to e's write (Additions' Extra and Tombstone, read as the driver
// sends them, a $rename's target included) writes a path that overlaps
// one of paths, which field names in the message; and one wrapping
// events.ErrUnguardedQuery when the additions cannot be read. The
// repository applies the additions after the policies' Checks, so a
// policy's Check calls it on every Before* event, as the built-in
// policies do, to keep listeners from writing the fields it governs.
func RefuseAdded(e *events.Event, refusal error, field string, paths ...string) error {
	return guard.RefuseAdded(e, refusal, field, paths...)
}
