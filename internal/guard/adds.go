package guard

import (
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
)

// What listeners add to a write (events.Event.Additions' Extra and
// Tombstone) is
// judged on the BSON the driver sends: a value of a type with its own
// encoding (a named string type, a MarshalBSONValue method) reads as what
// it is encoded to, never as its Go value.

// Ops returns ops, the update operators a listener added to a write
// (Additions.Extra or Additions.Tombstone), as the driver sends them when it
// encodes them with reg (model.Registry() when nil): each operator with
// its fields as a bson.D of bson.RawValue, which the driver sends
// verbatim. An operator that holds no document of fields, and a $rename
// whose target is not a string, are errors wrapping mql.ErrBadDocument.
func Ops(reg *bsoncodec.Registry, ops bson.D) (bson.D, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	if reg == nil {
		reg = registry
	}
	raw, err := bsonio.Marshal(reg, ops)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", mql.ErrBadDocument, err)
	}
	elems, err := raw.Elements()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", mql.ErrBadDocument, err)
	}
	out := make(bson.D, len(elems))
	for i, el := range elems {
		op := el.Key()
		doc, ok := el.Value().DocumentOK()
		if !ok {
			return nil, fmt.Errorf("operator %s holds a %v, not a document of fields: %w", op, el.Value().Type, mql.ErrBadDocument)
		}
		fields, err := doc.Elements()
		if err != nil {
			return nil, fmt.Errorf("operator %s: %w: %w", op, mql.ErrBadDocument, err)
		}
		d := make(bson.D, len(fields))
		for j, f := range fields {
			d[j] = bson.E{Key: f.Key(), Value: f.Value()}
			if _, ok := RenameTarget(op, d[j]); op == "$rename" && !ok {
				return nil, fmt.Errorf("$rename %q: the target is a %v, not a field name: %w", f.Key(), f.Value().Type, mql.ErrBadDocument)
			}
		}
		out[i] = bson.E{Key: op, Value: d}
	}
	return out, nil
}

// RenameTarget returns the path that field f of operator op moves a
// value to: for $rename, f's value (see mql.RenameTarget); for every other
// update operator none, since only $rename's values name paths ($pull's
// conditions and $push's $sort name fields of array elements).
func RenameTarget(op string, f bson.E) (string, bool) {
	if op != "$rename" {
		return "", false
	}
	return mql.RenameTarget(f.Value)
}

// Added is a path that a listener's addition to a write writes.
type Added struct {
	In    string // "AddExtra" or "AddTombstone"
	Op    string // the update operator, such as "$set" or "$rename"
	Path  string // the path it writes: a field's, or a $rename's source or target
	Field string // the path of those AddedTo was given that Path overlaps
}

// AddedTo returns the first path that e's Extra or Tombstone writes, as
// the driver sends them (see Ops, with e.Registry), that overlaps one of
// paths (mql.PathsOverlap): a field of an operator, or a $rename's source
// or target. It returns an error when they cannot be read, so that a
// policy's Check fails closed.
func AddedTo(e *events.Event, paths ...string) (Added, bool, error) {
	for _, add := range [...]struct {
		in  string
		ops bson.D
	}{{"AddExtra", e.Additions().Extra}, {"AddTombstone", e.Additions().Tombstone}} {
		if len(add.ops) == 0 {
			continue
		}
		ops, err := Ops(e.Registry, add.ops)
		if err != nil {
			return Added{}, false, fmt.Errorf("a listener's Event.%s: %w", add.in, err)
		}
		for _, op := range ops {
			for _, f := range op.Value.(bson.D) {
				written := []string{f.Key}
				if to, ok := RenameTarget(op.Key, f); ok {
					written = append(written, to)
				}
				for _, w := range written {
					for _, p := range paths {
						if mql.PathsOverlap(w, p) {
							return Added{In: add.in, Op: op.Key, Path: w, Field: p}, true, nil
						}
					}
				}
			}
		}
	}
	return Added{}, false, nil
}

// RefuseAdded returns an error wrapping refusal when e's Extra or
// Tombstone writes one of paths (see AddedTo), which field names for the
// message, and one wrapping events.ErrUnguardedQuery when they cannot be
// read. A policy's Check calls it on every event: the repository applies
// what listeners added to the write after the Checks, so a field the
// policy governs must not be among it.
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
