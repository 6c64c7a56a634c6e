package listeners

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Auditor says who is acting, from the request's context: Spring's
// AuditorAware. A nil value leaves the "by" fields as they are. It reads
// the context the operation runs on.
type Auditor func(ctx context.Context) (any, error)

// Auditing fills fields tagged audit:"createdAt", "updatedAt",
// "createdBy" and "updatedBy" on BeforeConvert, as Spring's auditing does
// for @CreatedDate, @LastModifiedDate, @CreatedBy and @LastModifiedBy.
//
// Inserts set all four (the created ones only when zero); updates and
// replaces set the updated ones. Created values are never overwritten by an
// update: when a model written with Update or Save has them zero (it was
// built rather than read), they are read back from the stored document
// first, with one query.
//
// Operator updates (UpdateOne, UpdateMany, FindOneAndUpdate) get the
// updated fields in $set, and upserts the created ones in $setOnInsert, on
// BeforeUpdate; fields the update writes itself are left as given.
//
// mgm.DefaultModel's created_at and updated_at (mgm.DateFields) count as
// createdAt and updatedAt fields: mgm's hooks set them on writes of a
// model only, and Auditing sets them on upserts and operator updates too,
// and keeps a stored created_at across a Save of a built model.
type Auditing struct {
	auditor Auditor
	now     func() time.Time
	fields  sync.Map // reflect.Type -> audited
}

// NewAuditing returns the listener. It applies WithAuditor and WithClock.
func NewAuditing(opts ...AuditingOption) *Auditing {
	a := &Auditing{now: time.Now}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Essential marks Auditing as an events.Essential listener: audit fields
// are part of the data, so Auditing runs when events are switched off too,
// as Spring's auditing callbacks do.
func (*Auditing) Essential() {}

// EventTypes tells the bus that Auditing handles BeforeConvert and
// BeforeUpdate.
func (*Auditing) EventTypes() []events.Type {
	return []events.Type{events.BeforeConvert, events.BeforeUpdate}
}

// HandleEvent fills e.Model's audit fields on BeforeConvert, and adds them
// to an operator update on BeforeUpdate.
func (l *Auditing) HandleEvent(ctx context.Context, e *events.Event) error {
	if e.Type == events.BeforeUpdate {
		return l.update(ctx, e)
	}
	if e.Type != events.BeforeConvert || e.Model == nil || !e.Op.Write() {
		return nil
	}
	st, ok, err := l.stamp(ctx, e.ModelType)
	if !ok {
		return err
	}
	mv := reflect.ValueOf(e.Model).Elem()
	insert := e.Op == events.OpInsert || e.Op == events.OpInsertMany
	if !insert {
		if err := l.restoreCreated(ctx, e, st.schema, st.fields, mv); err != nil {
			return err
		}
	}
	for i := range st.fields {
		a := &st.fields[i]
		fv := a.Value(mv)
		switch a.Kind {
		case model.CreatedAt:
			if insert && fv.IsZero() {
				setTime(fv, st.now)
			}
		case model.UpdatedAt:
			setTime(fv, st.now)
		case model.CreatedBy, model.UpdatedBy:
			if a.Kind == model.CreatedBy && (!insert || !fv.IsZero()) {
				continue
			}
			w, ok, err := st.author(a)
			if err != nil {
				return err
			}
			if ok {
				fv.Set(w)
			}
		}
	}
	return nil
}

// stamp is what one operation stamps a model's audit fields with.
type stamp struct {
	schema *model.Schema
	fields []model.AuditField // the model's audit fields
	now    time.Time
	who    any // the auditor's value; nil without an auditor
}

// stamp returns what an operation on models of type t stamps their audit
// fields with; ok is false when t has none, or on an error.
func (l *Auditing) stamp(ctx context.Context, t reflect.Type) (st stamp, ok bool, err error) {
	st.schema, st.fields, err = l.audited(t)
	if err != nil || len(st.fields) == 0 {
		return st, false, err
	}
	st.now = l.now().UTC().Truncate(time.Millisecond) // BSON dates hold milliseconds
	if l.auditor == nil {
		return st, true, nil
	}
	if st.who, err = l.auditor(ctx); err != nil {
		return st, false, fmt.Errorf("auditor: %w", err)
	}
	return st, true, nil
}

// author returns the auditor's value as the value of audit field a, and
// false when there is no auditor.
func (st *stamp) author(a *model.AuditField) (reflect.Value, bool, error) {
	if st.who == nil {
		return reflect.Value{}, false, nil
	}
	w, err := st.schema.Convert(&a.Field, st.who)
	return w, err == nil, err
}

// update adds the audit fields to an operator update: updatedAt and
// updatedBy with $set, and for an upsert createdAt and createdBy with
// $setOnInsert, so that they are set only on the document it inserts. A
// field the update writes already (in any operator) is left as the caller
// gave it, so no field is ever both in $set and in $setOnInsert. On an
// update pipeline the same fields are set by a $set stage, the created ones
// only where they are missing.
func (l *Auditing) update(ctx context.Context, e *events.Event) error {
	st, ok, err := l.stamp(ctx, e.ModelType)
	if !ok {
		return err
	}
	u, err := mql.ParseUpdate(e.Update)
	if err != nil {
		return err
	}
	for i := range st.fields {
		a := &st.fields[i]
		created := a.Kind == model.CreatedAt || a.Kind == model.CreatedBy
		updated := a.Kind == model.UpdatedAt || a.Kind == model.UpdatedBy
		if !(created || updated) || (created && !e.Upsert) || u.Touches(a.BSON) {
			continue // the soft-delete marks are package softdelete's
		}
		var v any = st.now
		if a.Kind == model.CreatedBy || a.Kind == model.UpdatedBy {
			w, ok, err := st.author(a)
			if !ok {
				if err != nil {
					return err
				}
				continue
			}
			v = w.Interface()
		}
		op := "$set"
		if created {
			op = "$setOnInsert"
		}
		if err := u.Add(op, a.BSON, v); err != nil {
			return err
		}
	}
	e.Update = u.Value()
	return nil
}

// restoreCreated reads back created values an update would otherwise
// overwrite with zero.
func (l *Auditing) restoreCreated(ctx context.Context, e *events.Event, s *model.Schema, audit []model.AuditField, mv reflect.Value) error {
	proj := bson.D{}
	for i := range audit {
		a := &audit[i]
		if (a.Kind == model.CreatedAt || a.Kind == model.CreatedBy) && a.Value(mv).IsZero() {
			proj = append(proj, bson.E{Key: a.BSON, Value: 1})
		}
	}
	m, ok := e.Model.(mgm.Model)
	if len(proj) == 0 || !ok {
		return nil
	}
	if e.Coll == nil {
		return fmt.Errorf("listeners: Auditing: the %v event of %v carries no collection to read the created fields from", e.Type, s.Type)
	}
	raw, err := e.Coll.FindOne(ctx, bson.D{{Key: "_id", Value: m.GetID()}},
		options.FindOne().SetProjection(proj)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil // a Save that will insert
	}
	if err != nil {
		return fmt.Errorf("reading the created fields of %v: %w", s.Type, err)
	}
	stored := reflect.New(s.Struct)
	if err := bsonio.Unmarshal(registry, raw, stored.Interface()); err != nil {
		return fmt.Errorf("reading the created fields of %v: %w", s.Type, err)
	}
	for i := range audit {
		a := &audit[i]
		if fv := a.Value(mv); (a.Kind == model.CreatedAt || a.Kind == model.CreatedBy) && fv.IsZero() {
			fv.Set(a.Value(stored.Elem()))
		}
	}
	return nil
}

var (
	registry   = model.Registry()
	dateFields = reflect.TypeFor[mgm.DateFields]()
)

// audited returns model type t's schema and the fields Auditing fills:
// its audit-tagged fields, and the CreatedAt and UpdatedAt of an embedded
// mgm.DateFields (mgm.DefaultModel's created_at and updated_at).
func (l *Auditing) audited(t reflect.Type) (*model.Schema, []model.AuditField, error) {
	if v, ok := l.fields.Load(t); ok {
		a := v.(audited)
		return a.schema, a.fields, nil
	}
	s, err := model.Of(t)
	if err != nil {
		return nil, nil, err
	}
	audit := s.Audit
	for _, f := range s.Fields {
		if len(f.Index) < 2 || s.Struct.FieldByIndex(f.Index[:len(f.Index)-1]).Type != dateFields {
			continue
		}
		kinds := map[string]model.AuditKind{"CreatedAt": model.CreatedAt, "UpdatedAt": model.UpdatedAt}
		if k, ok := kinds[f.Name]; ok {
			audit = append(slices.Clip(audit), model.AuditField{Field: f, Kind: k})
		}
	}
	v, _ := l.fields.LoadOrStore(t, audited{s, audit})
	a := v.(audited)
	return a.schema, a.fields, nil
}

// audited is what Auditing keeps of a model type: its schema, and the
// fields it fills.
type audited struct {
	schema *model.Schema
	fields []model.AuditField
}

func setTime(fv reflect.Value, t time.Time) {
	switch fv.Interface().(type) {
	case time.Time:
		fv.Set(reflect.ValueOf(t))
	case *time.Time:
		fv.Set(reflect.ValueOf(&t))
	case primitive.DateTime:
		fv.Set(reflect.ValueOf(primitive.NewDateTimeFromTime(t)))
	}
}
