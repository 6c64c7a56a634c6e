package events

import (
	"slices"

	"go.mongodb.org/mongo-driver/bson"
)

// Guard is a condition on the stored document that a listener adds to the
// filter of an operation's write (see Event.Guards), with the error the
// operation fails with when the condition does not hold.
type Guard struct {
	Cond bson.E
	Err  error
}

// AddExtra adds path: value to operator op ("$set", "$unset", "$push",
// "$inc", "$min", ...) of e.Extra, the update operators that the
// operation's write applies besides its own change.
func (e *Event) AddExtra(op, path string, value any) { e.Extra = addOp(e.Extra, op, path, value) }

// AddTombstone adds path: value to operator op of e.Tombstone, the update
// that keeps a deleted document when no listener turns the delete into an
// update of its own.
func (e *Event) AddTombstone(op, path string, value any) {
	e.Tombstone = addOp(e.Tombstone, op, path, value)
}

// AddGuard adds cond to the filter of the operation's write; when the
// document exists but cond does not hold, the operation writes nothing and
// fails with err.
func (e *Event) AddGuard(cond bson.E, err error) {
	e.Guards = append(e.Guards, Guard{Cond: cond, Err: err})
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
