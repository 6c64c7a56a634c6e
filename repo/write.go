package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Insert inserts m. A model whose ID is a zero ObjectID gets a new one
// before BeforeConvert, so that every event names the document; the ID is
// set back to zero if the write fails.
func (r *Repository[T]) Insert(ctx context.Context, m T) error {
	if o := r.operation("Insert", events.OpInsert); o != nil {
		return r.bus.Intercept(ctx, o, func(ctx context.Context) error { return r.insert(ctx, o, m) })
	}
	return r.insert(ctx, nil, m)
}

func (r *Repository[T]) insert(ctx context.Context, o *events.Operation, m T) error {
	mv, err := r.check(m, "Insert")
	if err != nil {
		return err
	}
	return r.writeOne(ctx, o, m, mv, events.OpInsert, "Insert")
}

// Save inserts m when it has no ID (or, for a versioned model, version 0),
// and otherwise replaces the stored document with it, inserting it if it is
// missing. With an `auto:"version"` field the replace is filtered on the
// version read, and a concurrent change gives ErrVersionConflict.
func (r *Repository[T]) Save(ctx context.Context, m T) error {
	if o := r.operation("Save", 0); o != nil {
		return r.bus.Intercept(ctx, o, func(ctx context.Context) error { return r.save(ctx, o, m) })
	}
	return r.save(ctx, nil, m)
}

func (r *Repository[T]) save(ctx context.Context, o *events.Operation, m T) error {
	mv, err := r.check(m, "Save")
	if err != nil {
		return err
	}
	if r.noID(m, mv) || (r.schema.Version != nil && r.schema.Version.Value(mv.Elem()).IsZero()) {
		return r.writeOne(ctx, o, m, mv, events.OpInsert, "Save")
	}
	return r.writeOne(ctx, o, m, mv, events.OpReplace, "Save")
}

// Update writes m's fields to the stored document with $set, as mgm's
// Update does. It returns ErrNotFound when no document has m's ID, and
// ErrVersionConflict when m is versioned and the stored version differs.
func (r *Repository[T]) Update(ctx context.Context, m T) error {
	if o := r.operation("Update", events.OpUpdate); o != nil {
		return r.bus.Intercept(ctx, o, func(ctx context.Context) error { return r.update(ctx, o, m) })
	}
	return r.update(ctx, nil, m)
}

func (r *Repository[T]) update(ctx context.Context, o *events.Operation, m T) error {
	mv, err := r.check(m, "Update")
	if err != nil {
		return err
	}
	if r.noID(m, mv) {
		return fmt.Errorf("repo %s: Update: %v has no ID: %w", r.coll.Name(), r.schema.Type, ErrInvalidArgument)
	}
	return r.writeOne(ctx, o, m, mv, events.OpUpdate, "Update")
}

// writeOne runs mgm's hooks, the events and the write for one model, and
// retries a duplicate-key failure that a listener repaired.
func (r *Repository[T]) writeOne(ctx context.Context, o *events.Operation, m T, mv reflect.Value, op events.Op, method string) error {
	if o != nil {
		o.Op = op
	}
	var err error
	if op == events.OpInsert {
		err = beforeCreate(ctx, m)
	} else {
		err = beforeUpdate(ctx, m)
	}
	if err != nil {
		return r.wrap(method, fmt.Errorf("model hook: %w", err))
	}
	zero := zeroAuto(r.schema, mv)
	e := r.event(ctx, op)
	defer release(e)
	if e != nil {
		e.Model = m
	}
	var filter any
	if op != events.OpInsert {
		if filter, err = r.query(ctx, e, r.modelFilter(m, mv)); err != nil {
			return r.wrap(method, err)
		}
	}
	var res *mongo.UpdateResult
	for attempt := 0; ; attempt++ {
		var stored bool
		res, stored, err = r.attempt(ctx, e, m, mv, op, filter)
		if err == nil {
			break
		}
		if stored {
			// Stored: keep the model as written, and tell AfterSave's
			// listeners (the outbox empties the recorder whose events it
			// stored), as unidentified does for a replace. mgm's hooks
			// after the write do not run.
			if o != nil && op == events.OpInsert {
				o.Inserted = 1
			}
			return errors.Join(r.wrap(method, err), r.publish(ctx, e, events.AfterSave))
		}
		retry, err := r.retryable(ctx, e, err, attempt)
		resetAuto(r.schema, mv, zero) // keys given for this attempt were not stored
		if retry {
			continue
		}
		return r.wrap(method, err)
	}
	if o != nil {
		if op == events.OpInsert {
			o.Inserted = 1
		} else if res != nil {
			o.Matched, o.Modified, o.Upserted = res.MatchedCount, res.ModifiedCount, res.UpsertedCount
		}
	}
	if err := r.publish(ctx, e, events.AfterSave); err != nil {
		return err
	}
	if op == events.OpInsert {
		err = afterCreate(ctx, m)
	} else {
		err = afterUpdate(ctx, m, res)
	}
	if err != nil {
		return r.wrap(method, fmt.Errorf("model hook after the write: %w", err))
	}
	return nil
}

// retryable asks the listeners whether a duplicate key can be retried. It
// returns the error to report when not.
func (r *Repository[T]) retryable(ctx context.Context, e *events.Event, err error, attempt int) (bool, error) {
	if e == nil || attempt >= r.retry || !mongo.IsDuplicateKeyError(err) {
		return false, err
	}
	retry, herr := r.handleWriteError(ctx, e, err)
	if herr != nil {
		return false, fmt.Errorf("%w (and repairing it failed: %v)", err, herr)
	}
	return retry, err
}

// modelFilter is the filter of a replace or update by model: its _id, and
// for a versioned model the version it was read at.
func (r *Repository[T]) modelFilter(m T, mv reflect.Value) bson.D {
	f := bson.D{{Key: "_id", Value: m.GetID()}}
	if vf := r.schema.Version; vf != nil {
		f = append(f, bson.E{Key: vf.BSON, Value: intOf(vf.Value(mv.Elem()))})
	}
	return f
}

// attempt runs BeforeConvert, encodes, runs BeforeSave and writes, with
// filter for a replace or an update. On failure it undoes what it set on
// the model (a generated ID, a version), unless stored: its own write
// stored the document, and only what came after failed.
func (r *Repository[T]) attempt(ctx context.Context, e *events.Event, m T, mv reflect.Value, op events.Op, filter any) (res *mongo.UpdateResult, stored bool, err error) {
	doc, u, err := r.prepare(ctx, e, m, mv, op, filter)
	if err != nil {
		return nil, false, err
	}
	var claim string
	if u.versioned && op != events.OpInsert {
		if claim, err = r.claimVersion(ctx, m.GetID(), u.old+1); err != nil {
			r.undo(&u, m, mv)
			return nil, false, err
		}
	}
	res, stored, err = r.write(ctx, e, m, op, doc, &u)
	if stored {
		return nil, true, err // keep the model as written
	}
	if err == nil && res != nil && res.MatchedCount == 0 && res.UpsertedCount == 0 {
		err = r.missing(ctx, m.GetID())
	}
	if err != nil {
		r.releaseVersion(ctx, claim)
		r.undo(&u, m, mv)
		return nil, false, err
	}
	if claim != "" {
		r.sweep.add(claim) // done with: see version_sweep.go
	}
	return res, false, nil
}

// write sends the insert, replace or update of m's document doc, with
// what listeners added to it. stored reports a failure after this write
// stored the document: the model's SetID panicked. It is a result, not a
// kind of error, so that an error a listener passes on from a nested
// operation cannot pass for this write's.
func (r *Repository[T]) write(ctx context.Context, e *events.Event, m T, op events.Op, doc any, u *undo) (res *mongo.UpdateResult, stored bool, err error) {
	upsert := op == events.OpReplace && r.schema.Version == nil
	if op == events.OpInsert {
		if e != nil {
			if err := refuseAdds(e); err != nil {
				return nil, false, err
			}
		}
		ir, err := r.coll.InsertOne(ctx, doc)
		if err == nil && !u.genID {
			if err = r.setID(m, ir.InsertedID, u.driverID); err != nil {
				return nil, true, err
			}
		}
		return nil, false, err
	}
	if !adds(e) {
		if op == events.OpReplace {
			res, err = r.coll.ReplaceOne(ctx, u.filter, doc, options.Replace().SetUpsert(upsert))
		} else {
			res, err = r.coll.UpdateOne(ctx, u.filter, bson.D{{Key: "$set", Value: doc}})
		}
		return res, false, err
	}
	update, err := r.modelUpdate(e, op, doc, m.GetID())
	if err != nil {
		return nil, false, err
	}
	filter, err := guarded(e, u.filter, false, upsert)
	if err != nil {
		return nil, false, err
	}
	res, err = r.coll.UpdateOne(ctx, filter, update, options.Update().SetUpsert(upsert))
	if missed(e, res, err) {
		if gerr := r.guardMiss(ctx, e, u.filter); gerr != nil {
			return nil, false, gerr
		}
	}
	return res, false, err
}

// missing tells a version conflict from a missing document.
func (r *Repository[T]) missing(ctx context.Context, id any) error {
	if r.schema.Version != nil {
		// A query like any other: policies confine it, so that it cannot
		// tell whether the _id exists where the caller may not look.
		filter, err := r.query(ctx, r.event(ctx, events.OpCount), bson.D{{Key: "_id", Value: id}})
		if err != nil {
			return err
		}
		n, err := r.coll.CountDocuments(ctx, filter, options.Count().SetLimit(1))
		if err == nil && n > 0 {
			return fmt.Errorf("%v %v: %w", r.schema.Type, id, ErrVersionConflict)
		}
	}
	return fmt.Errorf("%v %v: no stored document has this _id (or none this call may reach): %w", r.schema.Type, id, ErrNotFound)
}

// undo is what prepare changed on a model, to take back if the write fails.
type undo struct {
	genID      bool  // prepare generated the model's ObjectID
	driverID   bool  // the model has none, and the driver makes it
	versioned  bool  // a replace or update of a versioned model
	old        int64 // the version it was read at
	bumped     int64 // the version it is written with
	hadVersion bool
	version    reflect.Value // the version field's value before the write
	filter     any
}

// zeroIDField zeroes the ObjectID field stored as _id in v, a struct,
// looking through inline structs and non-nil inline pointers (an embedded
// *mgm.DefaultModel) as the driver encodes them, and reports whether it
// found one. The shallowest wins, as in the driver.
func zeroIDField(v reflect.Value) bool {
	var inline []reflect.Value
	for i := range v.NumField() {
		sf, fv := v.Type().Field(i), v.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("bson"), ",")
		if name == "_id" && fv.Type() == oidType && fv.CanSet() {
			fv.Set(reflect.Zero(oidType))
			return true
		}
		if !slices.Contains(strings.Split(opts, ","), "inline") {
			continue
		}
		if fv.Kind() == reflect.Pointer && !fv.IsNil() {
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.Struct {
			inline = append(inline, fv)
		}
	}
	for _, fv := range inline {
		if zeroIDField(fv) {
			return true
		}
	}
	return false
}

// takeID gives m back the zero ObjectID it had before prepare gave it
// one, through SetID; if SetID refuses (panics), in its _id field.
func (r *Repository[T]) takeID(m T, mv reflect.Value) {
	defer func() {
		if recover() != nil {
			zeroIDField(mv.Elem())
		}
	}()
	m.SetID(primitive.NilObjectID)
}

// undo takes back what prepare set on m.
func (r *Repository[T]) undo(u *undo, m T, mv reflect.Value) {
	if u.genID {
		r.takeID(m, mv)
	}
	if u.hadVersion {
		r.schema.Version.Value(mv.Elem()).Set(u.version)
	}
}

// prepare gives the model its ID and the version it will be written
// with, publishes BeforeConvert, and, when a BeforeSave or AfterSave listener will look at the document,
// encodes the model once and publishes BeforeSave. It returns what to
// write: the document as BeforeSave's listeners left it, as a pointer to
// e.Document (which the driver encodes as the document, and which costs no
// copy of the slice header to the heap), or else the model itself, which
// the driver then encodes once with the same registry.
func (r *Repository[T]) prepare(ctx context.Context, e *events.Event, m T, mv reflect.Value, op events.Op, filter any) (any, undo, error) {
	u := undo{filter: filter}
	if e != nil {
		// Publishing BeforeConvert forgets what listeners added to an
		// earlier attempt.
		e.Document, e.Filter = nil, filter
	}
	if op == events.OpInsert {
		// Before BeforeConvert, so that every event of the insert names
		// the document. With no event to name it in, the driver gives it,
		// as to mgm's Create, where it can.
		if zero, toDriver := r.zeroObjectID(m, mv); zero && e == nil && toDriver {
			u.driverID = true
		} else if zero {
			if err := r.giveID(m, mv, primitive.NewObjectID()); err != nil {
				return nil, u, err
			}
			u.genID = true
		}
	}
	if err := r.bumpVersion(mv, op, &u); err != nil {
		r.undo(&u, m, mv)
		return nil, u, err
	}
	if err := r.publish(ctx, e, events.BeforeConvert); err != nil {
		r.undo(&u, m, mv)
		return nil, u, err
	}
	if err := r.keptVersion(mv, &u); err != nil {
		r.undo(&u, m, mv)
		return nil, u, err
	}
	if err := r.zeroKey(mv); err != nil {
		r.undo(&u, m, mv)
		return nil, u, err
	}
	if e == nil || !(r.bus.Handles(events.BeforeSave, e.ModelType) || r.bus.Handles(events.AfterSave, e.ModelType)) {
		return m, u, nil
	}
	doc, err := r.encode(m)
	if err == nil {
		e.Document = doc
		err = r.publish(ctx, e, events.BeforeSave)
	}
	if err != nil {
		r.undo(&u, m, mv)
		return nil, undo{}, err
	}
	return &e.Document, u, nil
}

func intOf(v reflect.Value) int64 {
	if v.CanInt() {
		return v.Int()
	}
	return int64(v.Uint())
}

func setInt(v reflect.Value, n int64) {
	if v.CanInt() {
		v.SetInt(n)
	} else {
		v.SetUint(uint64(n))
	}
}

// setID gives m the ID the driver generated, turning a panic in the
// model's SetID (mgm's IDField asserts an ObjectID) into an error, as it
// does a SetID that leaves the model without it (a value receiver). Unless
// fresh (the model had no ID, and the driver made one), it leaves a model
// that has the ID already alone.
func (r *Repository[T]) setID(m T, id any, fresh bool) (err error) {
	if id == nil || (!fresh && reflect.DeepEqual(m.GetID(), id)) {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the document was written, but %T.SetID(%T) panicked: %v", m, id, v)
		}
	}()
	m.SetID(id)
	if !r.holdsID(m, reflect.ValueOf(m), id) {
		return fmt.Errorf("the document was written, but %T.SetID(%v) did not set the model's ID (a SetID with a value receiver sets a copy): %w", m, id, ErrInvalidArgument)
	}
	return nil
}

func isZeroID(id any) bool {
	switch v := id.(type) {
	case nil:
		return true
	case primitive.ObjectID:
		return v.IsZero()
	case string:
		return v == ""
	case int64:
		return v == 0
	}
	rv := reflect.ValueOf(id)
	return rv.IsZero() || (rv.Kind() == reflect.Pointer && rv.IsNil())
}
