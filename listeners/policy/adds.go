package policy

import (
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// Added is a path that a listener's addition to a write writes.
type Added struct {
	In    string // "AddExtra" or "AddTombstone"
	Op    string // the update operator, such as "$set" or "$rename"
	Path  string // the path it writes: a field's, or a $rename's source or target
	Field string // the path of those AddedTo was given that Path overlaps
}

// AddedTo returns the first path that e's additions (Additions' Extra and
// Tombstone) write, as
// the driver sends them (see mql.EncodeOperators, with e.Registry), that
// overlaps one of paths (mql.PathsOverlap): a field of an operator, or a
// $rename's source or target. It returns an error when they cannot be
// read, so that a policy's Check fails closed.
func AddedTo(e *events.Event, paths ...string) (Added, bool, error) {
	for _, add := range [...]struct {
		in  string
		ops bson.D
	}{{"AddExtra", e.Additions().Extra}, {"AddTombstone", e.Additions().Tombstone}} {
		if len(add.ops) == 0 {
			continue
		}
		ops, err := mql.EncodeOperators(e.Registry, add.ops)
		if err != nil {
			return Added{}, false, fmt.Errorf("a listener's Event.%s: %w", add.in, err)
		}
		if a, ok := overlapping(ops, paths); ok {
			a.In = add.in
			return a, true, nil
		}
	}
	return Added{}, false, nil
}

// overlapping returns the first path that ops, as mql.EncodeOperators
// returns them, write that overlaps one of paths.
func overlapping(ops bson.D, paths []string) (Added, bool) {
	for _, op := range ops {
		for _, f := range op.Value.(bson.D) {
			if w, p, ok := firstOverlap(mql.Written(op.Key, f), paths); ok {
				return Added{Op: op.Key, Path: w, Field: p}, true
			}
		}
	}
	return Added{}, false
}

// firstOverlap returns the first of written that overlaps one of paths,
// and that path.
func firstOverlap(written, paths []string) (string, string, bool) {
	for _, w := range written {
		for _, p := range paths {
			if mql.PathsOverlap(w, p) {
				return w, p, true
			}
		}
	}
	return "", "", false
}

// RefuseAdded returns an error wrapping refusal when what the listeners
// added to e's write (Additions' Extra and Tombstone, read as the driver
// sends them, a $rename's target included) writes a path that overlaps
// one of paths, which field names in the message; and one wrapping
// events.ErrUnguardedQuery when the additions cannot be read. The
// repository applies the additions after the policies' Checks, so a
// policy's Check calls it on every Before* event, as the built-in
// policies do, to keep listeners from writing the fields it governs.
func RefuseAdded(e *events.Event, refusal error, field string, paths ...string) error {
	if a := e.Additions(); len(a.Extra) == 0 && len(a.Tombstone) == 0 {
		return nil
	}
	a, ok, err := AddedTo(e, paths...)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", events.ErrUnguardedQuery, err)
	case ok:
		return fmt.Errorf("%w: a listener's Event.%s %s writes %q, and so %s %q, which a listener may not add to a write", refusal, a.In, a.Op, a.Path, field, a.Field)
	}
	return nil
}
