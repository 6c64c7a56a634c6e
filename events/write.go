package events

import (
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
)

// A Before* listener may add to the operation's write besides changing
// the event's Document, Filter or Update: fields a replace keeps as
// stored (Keep), update operators (AddExtra), the update that keeps a
// deleted document (AddTombstone), and conditions on the stored document
// (AddGuard). The repository applies them in that same single-document
// write, so that they are stored, checked or refused with the change,
// atomically. Listeners can only add: what one listener added, no other
// can take back. Publishing BeforeConvert, which begins a model's write
// (again, when the repository retries it), starts from nothing added.
//
// A call that cannot mean anything (an addition to an After* event, an
// operator that is not one, a guard without its error) is the listener's
// mistake: the bus fails the listener's call with an error that says so,
// as if the listener had returned it.

// Additions is what the Before* listeners of an operation added to its
// write, as Event.Additions returns it: to the repository, which applies
// it, and to the policies' Checks, which verify it. Its slices are the
// event's own; read them, never change them.
type Additions struct {
	// Keep names top-level fields of the stored document that a replace
	// (BeforeSave of a replace, see Op.Replace) leaves as they are, such
	// as a field the model does not declare (see Event.Keep).
	Keep []string
	// Extra is the update operators listeners added to the write, each
	// with a bson.D of its fields (see Event.AddExtra).
	Extra bson.D
	// Tombstone is the update that keeps a deleted document (see
	// Event.AddTombstone).
	Tombstone bson.D
	// Guards are the conditions on the stored document that the write's
	// filter holds besides its own (see Event.AddGuard).
	Guards []Guard
}

// Guard is a condition on the stored document that a listener adds to the
// filter of an operation's write (see Event.AddGuard), with the error the
// operation fails with when the condition does not hold.
type Guard struct {
	Cond bson.E
	Err  error
}

// Additions returns what the event's listeners added to the write.
func (e *Event) Additions() Additions { return e.adds }

// Keep asks a replace to leave top-level field name of the stored
// document as it is: a field the model does not declare, such as one a
// policy stores beside it. With any field kept, the repository sends the
// replace as an update: $set of every field of Event.Document but _id,
// $unset of the model's declared fields the document lacks, and the
// Extra operators. Stored fields the model does not declare are then
// kept, and a document that holds a kept field is refused. name is a
// field's name: not empty, not _id, without a dot or a leading $.
func (e *Event) Keep(name string) {
	if !e.adding("Keep") {
		return
	}
	if name == "" || name == "_id" || strings.ContainsRune(name, '.') || strings.HasPrefix(name, "$") {
		e.refuse(fmt.Errorf("events: Keep(%q): not the name of a top-level field other than _id", name))
		return
	}
	e.adds.Keep = append(e.adds.Keep, name)
}

// AddExtra adds path: value to update operator op ("$set", "$unset",
// "$push", "$inc", "$min", ...) of the operators that the operation's
// write applies besides its own change: on BeforeSave of a replace or an
// update, on BeforeUpdate, and on BeforeDelete, where the delete then
// becomes an update of the document (Event.Update, or the tombstone, with
// these operators). An insert refuses them: change Event.Document
// instead. They may write no field of the model and none that the write
// itself writes.
func (e *Event) AddExtra(op, path string, value any) {
	if e.adding("AddExtra") && e.operator("AddExtra", op, path) {
		e.adds.Extra = addOp(e.adds.Extra, op, path, value)
	}
}

// AddTombstone adds path: value to operator op of the update that keeps
// a document a BeforeDelete deletes, when no listener turned the delete
// into an update of its own (Event.Update, a soft delete, wins). The
// listener that keeps such documents hides them from every read,
// Aggregate included, and removes them when done with them.
func (e *Event) AddTombstone(op, path string, value any) {
	if !e.adding("AddTombstone") || !e.operator("AddTombstone", op, path) {
		return
	}
	if e.Type != BeforeDelete {
		e.refuse(fmt.Errorf("events: AddTombstone on %v: only a delete (BeforeDelete) keeps a tombstone", e.Type))
		return
	}
	e.adds.Tombstone = addOp(e.adds.Tombstone, op, path, value)
}

// AddGuard adds cond, a condition on the stored document, to the filter
// of the operation's write, for the server to check in that same write:
// when the write matches no document but would without its guards,
// nothing is written and the operation fails with the error of the first
// guard that does not hold, err. A guard needs a write of one document.
func (e *Event) AddGuard(cond bson.E, err error) {
	if !e.adding("AddGuard") {
		return
	}
	if cond.Key == "" || err == nil {
		e.refuse(fmt.Errorf("events: AddGuard(%q, %v): a guard needs a field (or an operator such as $expr) and the error its operation fails with", cond.Key, err))
		return
	}
	e.adds.Guards = append(e.adds.Guards, Guard{Cond: cond, Err: err})
}

// adding reports whether e takes additions: it is a Before* event.
func (e *Event) adding(method string) bool {
	if !e.Type.Before() {
		e.refuse(fmt.Errorf("events: %s on %v, which comes after the write", method, e.Type))
		return false
	}
	return true
}

// operator reports whether op and path can be a field of an update
// operator.
func (e *Event) operator(method, op, path string) bool {
	if len(op) < 2 || op[0] != '$' || path == "" {
		e.refuse(fmt.Errorf("events: %s(%q, %q): want an update operator such as $set and a field's path", method, op, path))
		return false
	}
	return true
}

// refuse keeps the first mistake a listener made in its additions, for
// the bus to fail the listener's call with.
func (e *Event) refuse(err error) {
	if e.misuse == nil {
		e.misuse = err
	}
}

// addOp returns ops with path: value added to operator op. It copies what
// it changes, so a document another event holds is never modified.
func addOp(ops bson.D, op, path string, value any) bson.D {
	field := bson.E{Key: path, Value: value}
	i := slices.IndexFunc(ops, func(e bson.E) bool { return e.Key == op })
	if i < 0 {
		return append(ops, bson.E{Key: op, Value: bson.D{field}})
	}
	ops = slices.Clone(ops)
	fields, _ := ops[i].Value.(bson.D)
	ops[i].Value = append(slices.Clip(fields), field)
	return ops
}

// clone returns a copy of a whose slices are its own.
func (a Additions) clone() Additions {
	return Additions{Keep: slices.Clone(a.Keep), Extra: slices.Clone(a.Extra),
		Tombstone: slices.Clone(a.Tombstone), Guards: slices.Clone(a.Guards)}
}
