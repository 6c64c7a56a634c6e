package events

import (
	"reflect"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsoncodec"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Type names one of the lifecycle events.
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
	// the delete is by model. A listener may set Event.Update to an update
	// document: the repository then applies it to the documents the filter
	// matches instead of deleting them (a soft delete), and AfterDelete's
	// DeletedCount counts the documents it changed. Event.AddTombstone and
	// Event.AddExtra keep a document the same way without competing with it.
	BeforeDelete
	// AfterDelete is published after the delete, with the filter, the
	// model when there is one, and the number of documents deleted.
	AfterDelete
	// BeforeQuery is published before every operation that sends a filter
	// or a pipeline to the server: reads, counts, Distinct, Aggregate,
	// updates, deletes, find-and-modify, and the _id filters that Save and
	// Update build. It carries Event.Filter, or Event.Pipeline for an
	// Aggregate; a listener may replace either, and what the listeners
	// leave is what is sent. It is the first event of its operation (after
	// mgm's hooks), so every later event sees the final filter. An error
	// aborts the operation, and nothing is sent.
	BeforeQuery
	// BeforeUpdate is published before an operator update (UpdateOne,
	// UpdateMany, FindOneAndUpdate), upserts included, with the final
	// filter, Event.Update (an update document or an update pipeline) and
	// Event.Upsert. A listener may replace Event.Update, for instance to
	// add $set or $setOnInsert fields (see mql.ParseUpdate). An error aborts.
	BeforeUpdate
	// AfterUpdate is published after an operator update, with the matched,
	// modified and upserted counts and the upserted ID.
	AfterUpdate

	numTypes = iota
)

var typeNames = [...]string{"", "BeforeConvert", "BeforeSave", "AfterSave", "AfterLoad", "AfterConvert", "BeforeDelete", "AfterDelete", "BeforeQuery", "BeforeUpdate", "AfterUpdate"}

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
	switch t {
	case BeforeConvert, BeforeSave, BeforeDelete, BeforeQuery, BeforeUpdate:
		return true
	}
	return false
}

// Op names the repository operation that published an event.
type Op uint8

// The repository operations.
const (
	OpInsert            Op = iota + 1 // Insert, or Save of a model without an ID.
	OpInsertMany                      // InsertMany.
	OpReplace                         // Save of a model that has an ID.
	OpUpdate                          // Update.
	OpFind                            // FindByID, FindOne, Find and the iterators.
	OpDelete                          // Delete of one model.
	OpDeleteMany                      // DeleteMany by filter.
	OpUpdateOne                       // UpdateOne: an operator update by filter.
	OpUpdateMany                      // UpdateMany: an operator update by filter.
	OpFindOneAndUpdate                // FindOneAndUpdate.
	OpFindOneAndDelete                // FindOneAndDelete.
	OpAggregate                       // Aggregate.
	OpDistinct                        // Distinct.
	OpCount                           // Count.
	OpDeleteOne                       // DeleteOne: a delete of one document by filter.
	OpReplaceOne                      // ReplaceOne: a replace of one document by filter with a model.
	OpFindOneAndReplace               // FindOneAndReplace.
	OpWatch                           // Watch: a change stream, whose query is Event.Pipeline.
)

var opNames = [...]string{"", "Insert", "InsertMany", "Replace", "Update", "Find", "Delete", "DeleteMany",
	"UpdateOne", "UpdateMany", "FindOneAndUpdate", "FindOneAndDelete", "Aggregate", "Distinct", "Count",
	"DeleteOne", "ReplaceOne", "FindOneAndReplace", "Watch"}

// String returns the operation's name, such as "InsertMany".
func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Insert reports whether o inserts every model it writes as a new
// document: Insert, and Save of a model without an ID (or, versioned, at
// version 0), publish OpInsert; InsertMany publishes OpInsertMany. A
// listener that acts on new documents asks e.Op.Insert(): e.Op ==
// OpInsert misses InsertMany.
//
// The upserts are not inserts: Save of a model with an ID (OpReplace),
// ReplaceOne and FindOneAndReplace with upsert, and the operator updates
// with upsert insert a document only when none matches, which is known
// after the write. Their events carry Event.Upsert, and AfterUpdate's
// UpsertedCount and UpsertedID tell whether an operator update inserted.
func (o Op) Insert() bool { return o == OpInsert || o == OpInsertMany }

// Write reports whether o writes a model (insert, replace or update,
// ReplaceOne and FindOneAndReplace included). The operator updates by
// filter do not: they publish BeforeUpdate instead.
func (o Op) Write() bool { return o >= OpInsert && o <= OpUpdate || o.Replace() }

// Replace reports whether o replaces a stored document with a model: Save
// of a model that has an ID (OpReplace), ReplaceOne and FindOneAndReplace.
// A listener that keeps fields across a replace (Event.Keep) asks this.
func (o Op) Replace() bool { return o == OpReplace || o == OpReplaceOne || o == OpFindOneAndReplace }

// OperatorUpdate reports whether o sends an operator update (UpdateOne,
// UpdateMany, FindOneAndUpdate) and so publishes BeforeUpdate.
func (o Op) OperatorUpdate() bool { return o >= OpUpdateOne && o <= OpFindOneAndUpdate }

// Event is what listeners receive. It is valid only during the call: a
// listener must not keep the pointer (Clone makes a copy it may keep).
// The repository reuses one Event for the successive events of one
// operation, and then for later operations.
//
// Its fields are what the operation tells its listeners, and what a
// listener may replace (Document, Filter, Pipeline, Update); what a
// Before* listener adds to the write goes through its methods (Keep,
// AddExtra, AddTombstone, AddGuard), and Additions reads it back.
type Event struct {
	// Type is the lifecycle event.
	Type Type
	// Op is the repository operation that published it.
	Op Op
	// Collection is the collection's name.
	Collection string
	// Coll is the collection the operation reads or writes, in the
	// repository's database and with its registry. A listener that reads
	// or writes beside the operation (an index, a lookup) uses it, never a
	// collection of the same name found in another database.
	Coll *mongo.Collection
	// Registry is the registry the repository encodes and decodes models,
	// filters and updates with.
	Registry *bsoncodec.Registry
	// ModelType is the model's Go type, such as *main.User.
	ModelType reflect.Type
	// Model is the model (a pointer) of an operation by model (Insert,
	// Save, Update, Delete), or the model just decoded (AfterConvert). It is
	// nil for AfterLoad and for the other events of operations by filter.
	Model any
	// Document is the encoded model (BeforeSave, AfterSave) or the document
	// as read (AfterLoad, AfterConvert). To change it, assign a new one.
	Document bson.Raw
	// Filter is the filter the operation sends: of a read, a count, a
	// delete, an update or a replace. BeforeQuery's listeners may replace
	// it; any value the driver accepts will do (bson.D, bson.M, a struct).
	// Use mql.And to add a condition to a filter of any shape.
	Filter any
	// Pipeline is the pipeline of Aggregate, or of Watch, whose stages
	// see change events: a stored document's fields are under
	// "fullDocument." there (BeforeQuery may replace it; see mql.Stages).
	// It is nil for other operations, and Filter is nil for these two: a
	// listener that confines a query must confine Pipeline, or the
	// repository refuses the operation.
	Pipeline any
	// Update is the update of UpdateOne, UpdateMany or FindOneAndUpdate:
	// an update document of operators, or an update pipeline. BeforeUpdate's
	// listeners may replace it; mql.ParseUpdate edits either shape. On
	// BeforeDelete it is nil, and a listener that sets it turns the delete
	// into that update (see BeforeDelete).
	Update any
	// Upsert reports whether the update may insert a document when none
	// matches (options SetUpsert(true)); it is set from BeforeQuery on.
	Upsert bool
	// Field is the field of a Distinct.
	Field string
	// DeletedCount is the number of documents deleted (AfterDelete).
	DeletedCount int64
	// MatchedCount, ModifiedCount and UpsertedCount are the counts of an
	// operator update (AfterUpdate); UpsertedID is the _id of the document
	// an upsert inserted, or nil. For FindOneAndUpdate, whose reply the
	// driver does not pass on, MatchedCount and ModifiedCount are 1 when it
	// returned a document, and the upsert fields stay unset.
	MatchedCount, ModifiedCount, UpsertedCount int64
	UpsertedID                                 any
	// Batch holds every model of an InsertMany, in order, and Index is the
	// position of Model in it. Batch is nil for other operations. Listeners
	// may use it to serve the whole batch at once, as AutoKeys does to take
	// all its numbers in one round trip.
	Batch []any
	// Index is Model's position in Batch.
	Index int
	// Quiet is set when events are switched off for the operation
	// (repo.WithoutEvents, WithoutEvents(ctx)) and only policies and
	// essential listeners run (see WithoutEvents).
	Quiet bool
	// Sort is the sort of a find or a find-and-modify, from its options,
	// so that a listener can refuse one it cannot serve. Read-only.
	Sort any
	// Projection is the projection of a find or a find-and-modify, from its
	// options, or nil: with MongoDB 4.4+ a projection may compute values,
	// so a policy may refuse one. Read-only.
	Projection any
	// Collation is the collation the operation's options ask for, or nil:
	// a collation changes what string equality means, so a policy may
	// refuse one. Read-only.
	Collation *options.Collation

	// What listeners added to the write (see Additions), and the first
	// mistake a listener made in adding to it, which the bus fails that
	// listener's call with.
	adds   Additions
	misuse error
}

// Clone returns a copy of e that a listener may keep after the call, as
// package async's listeners do: the Event struct, its Document bytes, its
// Collation, Batch and the slices of its Additions (one level deep) are
// the copy's own. What the copy's other fields point to is shared: Model
// and the models in Batch are the caller's pointers, which it may change
// once the operation returns (Document holds the bytes as written or
// read); Filter, Pipeline, Update, UpsertedID, Sort and Projection are
// the values the operation used, to be read only; Coll and Registry are
// the repository's, safe for concurrent use.
func (e *Event) Clone() *Event {
	c := *e
	c.Document = slices.Clone(e.Document)
	c.Batch = slices.Clone(e.Batch)
	c.adds = e.adds.clone()
	c.misuse = nil
	if e.Collation != nil {
		col := *e.Collation
		c.Collation = &col
	}
	return &c
}
