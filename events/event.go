// Package events is the lifecycle event bus of mgmevents: Spring Data
// MongoDB's seven mapping events for Go models, with typed listeners,
// explicit ordering and errors that abort a write before it reaches the
// database. The package does no database I/O; package repo publishes the
// events around each operation.
package events

import (
	"reflect"
	"strconv"

	"go.mongodb.org/mongo-driver/bson"
)

// Type names one of the seven lifecycle events.
type Type uint8

// The lifecycle events, with Spring Data MongoDB's names and meanings.
const (
	// BeforeConvert is published with the model before it is encoded to
	// BSON. Listeners may change the model.
	BeforeConvert Type = iota + 1
	// BeforeSave is published with the model and its encoded document just
	// before the write. A listener may replace Event.Document; the
	// replacement is what gets written.
	BeforeSave
	// AfterSave is published after the write, with the model (its ID
	// filled in) and the document that was written.
	AfterSave
	// AfterLoad is published with the raw document as read, before it is
	// decoded. A listener may replace Event.Document.
	AfterLoad
	// AfterConvert is published with the document and the decoded model.
	AfterConvert
	// BeforeDelete is published with the delete filter, and the model when
	// the delete is by model.
	BeforeDelete
	// AfterDelete is published after the delete, with the filter, the
	// model when there is one, and the number of documents deleted.
	AfterDelete

	numTypes = iota
)

var typeNames = [...]string{"", "BeforeConvert", "BeforeSave", "AfterSave", "AfterLoad", "AfterConvert", "BeforeDelete", "AfterDelete"}

// String returns the event's Spring name, such as "BeforeSave".
func (t Type) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Before reports whether t is published before the database is touched, so
// that an error from its listeners aborts the operation.
func (t Type) Before() bool {
	return t == BeforeConvert || t == BeforeSave || t == BeforeDelete
}

// Op names the repository operation that published an event.
type Op uint8

// The repository operations.
const (
	OpInsert     Op = iota + 1 // Insert, or Save of a model without an ID.
	OpInsertMany               // InsertMany.
	OpReplace                  // Save of a model that has an ID.
	OpUpdate                   // Update.
	OpFind                     // FindByID, FindOne, Find and the iterators.
	OpDelete                   // Delete of one model.
	OpDeleteMany               // DeleteMany by filter.
)

var opNames = [...]string{"", "Insert", "InsertMany", "Replace", "Update", "Find", "Delete", "DeleteMany"}

// String returns the operation's name, such as "InsertMany".
func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Write reports whether o writes a model (insert, replace or update).
func (o Op) Write() bool { return o >= OpInsert && o <= OpUpdate }

// Event is what listeners receive. It is valid only during the call: a
// listener must not keep the pointer. The repository reuses one Event for
// the successive events of one operation.
type Event struct {
	// Type is the lifecycle event.
	Type Type
	// Op is the repository operation that published it.
	Op Op
	// Collection is the collection's name.
	Collection string
	// ModelType is the model's Go type, such as *main.User.
	ModelType reflect.Type
	// Model is the model (a pointer). It is nil for AfterLoad, and for
	// BeforeDelete and AfterDelete of a DeleteMany.
	Model any
	// Document is the encoded model (BeforeSave, AfterSave) or the document
	// as read (AfterLoad, AfterConvert). To change it, assign a new one.
	Document bson.Raw
	// Filter is the filter of a delete, an update or a replace.
	Filter any
	// DeletedCount is the number of documents deleted (AfterDelete).
	DeletedCount int64
	// Batch holds every model of an InsertMany, in order, and Index is the
	// position of Model in it. Batch is nil for other operations. Listeners
	// may use it to serve the whole batch at once, as AutoKeys does to take
	// all its numbers in one round trip.
	Batch []any
	// Index is Model's position in Batch.
	Index int
	// Unset has bit i set when the model's auto field i (model.Schema.Auto)
	// was zero when the operation began, so a listener filled it in. A
	// WriteErrorHandler uses it to repair only the keys it gave.
	Unset uint64
}
