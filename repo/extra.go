package repo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// What listeners add to a write (events.Event.Additions: Keep, Extra,
// Tombstone and Guards) is applied here, in the write itself: one single-document
// operation, so that it is stored, or refused, with the change.

// adds reports whether e's listeners added anything to the write.
func adds(e *events.Event) bool {
	if e == nil {
		return false
	}
	a := e.Additions()
	return len(a.Keep) > 0 || len(a.Extra) > 0 || len(a.Guards) > 0 || len(a.Tombstone) > 0
}

// refuseAdds refuses what listeners added to an insert, which has no
// update to carry it.
func refuseAdds(e *events.Event) error {
	if a := e.Additions(); len(a.Extra) > 0 || len(a.Guards) > 0 {
		return fmt.Errorf("a listener added update operators or guards (Event.AddExtra, AddGuard) to an insert, which has no update to apply them with; change Event.Document instead: %w", ErrInvalidArgument)
	}
	return nil
}

// modelUpdate is the update that writes doc, the model as encoded or the
// model itself, for a replace or an update (op) that a listener added to:
// $set of every field (but _id, for a replace), for a replace $unset of
// the model's declared fields doc lacks, and Extra.
func (r *Repository[T]) modelUpdate(e *events.Event, op events.Op, doc any, id any) (any, error) {
	var raw bson.Raw
	switch d := doc.(type) {
	case *bson.Raw:
		raw = *d
	case bson.Raw:
		raw = d
	case T:
		var err error
		if raw, err = r.encode(d); err != nil {
			return nil, err
		}
	}
	elems, err := raw.Elements()
	if err != nil {
		return nil, fmt.Errorf("the document to write: %w", err)
	}
	added := e.Additions()
	set := make(bson.D, 0, len(elems))
	for _, el := range elems {
		k := el.Key()
		if slices.Contains(added.Keep, k) {
			return nil, fmt.Errorf("the %v document holds field %q, which a listener keeps as stored (Event.Keep): %w", r.schema.Type, k, ErrInvalidArgument)
		}
		if k != "_id" || op == events.OpUpdate {
			set = append(set, bson.E{Key: k, Value: el.Value()})
		}
	}
	if len(set) == 0 {
		set = bson.D{{Key: "_id", Value: id}}
	}
	update := bson.D{{Key: "$set", Value: set}}
	if op == events.OpReplace {
		var unset bson.D
		for _, f := range r.schema.Fields {
			if f.BSON == "_id" || slices.Contains(added.Keep, f.BSON) {
				continue
			}
			if _, err := raw.LookupErr(f.BSON); err != nil {
				unset = append(unset, bson.E{Key: f.BSON, Value: ""})
			}
		}
		if len(unset) > 0 {
			update = append(update, bson.E{Key: "$unset", Value: unset})
		}
	}
	return r.withExtra(update, added.Extra, "AddExtra")
}

// withExtra returns update with the operators of extra added. extra may
// write only fields the model does not declare, and none the update
// writes: a listener's addition never changes what policies check.
func (r *Repository[T]) withExtra(update any, extra bson.D, what string) (any, error) {
	if len(extra) == 0 {
		return update, nil
	}
	u, err := mql.ParseUpdate(update)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	extra, err = r.checkAdded(extra, what, u)
	if err != nil {
		return nil, err
	}
	for _, op := range extra {
		for _, f := range op.Value.(bson.D) { // as mql.EncodeOperators returns them
			if err := u.Add(op.Key, f.Key, f.Value); err != nil {
				return nil, fmt.Errorf("a listener's Event.%s %s %q: %w", what, op.Key, f.Key, err)
			}
		}
	}
	return u.Value(), nil
}

// checkAdded refuses operators of a listener's Extra or Tombstone that
// write a field of the model, or one that u (when not nil) writes: by a
// field of the operator, or by a $rename's target, the one operator whose
// values name paths. It reads ops as the driver sends them, and returns
// them so (see mql.EncodeOperators), for the caller to send what was checked.
func (r *Repository[T]) checkAdded(ops bson.D, what string, u *mql.Update) (bson.D, error) {
	if err := mql.CheckOperators(ops); err != nil {
		return nil, fmt.Errorf("a listener's Event.%s: %w: %w", what, ErrInvalidArgument, err)
	}
	ops, err := mql.EncodeOperators(r.reg, ops)
	if err != nil {
		return nil, fmt.Errorf("a listener's Event.%s: %w: %w", what, ErrInvalidArgument, err)
	}
	for _, op := range ops {
		for _, f := range op.Value.(bson.D) {
			for _, p := range mql.Written(op.Key, f) {
				top, _, _ := strings.Cut(p, ".")
				if top == "_id" || r.schema.FieldByBSON(top) != nil {
					return nil, fmt.Errorf("a listener's Event.%s %s %q writes field %q of %v; a listener may add only fields the model does not declare: %w", what, op.Key, f.Key, top, r.schema.Type, ErrInvalidArgument)
				}
				if u != nil && u.Touches(p) {
					return nil, fmt.Errorf("a listener's Event.%s %s %q writes %q, which the operation writes too: %w", what, op.Key, f.Key, p, ErrInvalidArgument)
				}
			}
		}
	}
	return ops, nil
}

// guarded returns filter with e's guards added. A guard needs a write of
// one document, and on an upsert a filter that pins the _id, so that a
// guarded miss cannot insert a second document.
func guarded(e *events.Event, filter any, many, upsert bool) (any, error) {
	if e == nil || len(e.Additions().Guards) == 0 {
		return filter, nil
	}
	guards := e.Additions().Guards
	if many {
		return nil, fmt.Errorf("a listener guarded a write of many documents (Event.AddGuard); guards apply to one: %w", ErrInvalidArgument)
	}
	if upsert {
		eqs, err := mql.Equalities(filter)
		if err != nil || !slices.ContainsFunc(eqs, func(c bson.E) bool { return c.Key == "_id" }) {
			return nil, fmt.Errorf("a listener guarded an upsert whose filter does not pin the _id (Event.AddGuard), so a guarded miss could insert a second document: %w", ErrInvalidArgument)
		}
	}
	conds := make([]bson.E, len(guards))
	for i, g := range guards {
		conds[i] = g.Cond
	}
	return mql.And(filter, conds...), nil
}

// guardMiss tells, after a guarded write matched nothing (or an upsert hit
// the _id it pins), whether a guard is why: it returns that guard's error,
// or nil when no document matches filter, the write's filter without its
// guards.
func (r *Repository[T]) guardMiss(ctx context.Context, e *events.Event, filter any) error {
	if e == nil || len(e.Additions().Guards) == 0 {
		return nil
	}
	guards := e.Additions().Guards
	one := options.Count().SetLimit(1)
	n, err := r.coll.CountDocuments(ctx, filter, one)
	if err != nil || n == 0 {
		return err
	}
	for _, g := range guards {
		n, err := r.coll.CountDocuments(ctx, mql.And(filter, g.Cond), one)
		if err != nil {
			return err
		}
		if n == 0 {
			return g.Err
		}
	}
	return fmt.Errorf("%w (the guards held again when checked: the document changed meanwhile)", guards[0].Err)
}

// missed reports whether a write's outcome may be a guarded miss.
func missed(e *events.Event, res *mongo.UpdateResult, err error) bool {
	if e == nil || len(e.Additions().Guards) == 0 {
		return false
	}
	if err != nil {
		return mongo.IsDuplicateKeyError(err)
	}
	return res.MatchedCount == 0 && res.UpsertedCount == 0
}

// deleteAs returns the update a delete is sent as, or nil for a delete:
// Update when a listener turned it into one (a soft delete), else
// Tombstone, with Extra added.
func (r *Repository[T]) deleteAs(e *events.Event) (any, error) {
	if e == nil {
		return nil, nil
	}
	update, added := e.Update, e.Additions()
	if update == nil && len(added.Tombstone) > 0 {
		tomb, err := r.checkAdded(added.Tombstone, "AddTombstone", nil)
		if err != nil {
			return nil, err
		}
		update = tomb
	}
	if update == nil {
		if len(added.Extra) > 0 || len(added.Guards) > 0 {
			return nil, fmt.Errorf("a BeforeDelete listener added update operators or guards (Event.AddExtra, AddGuard) to a delete that stays a delete (no Update, no tombstone), which cannot carry them: %w", ErrInvalidArgument)
		}
		return nil, nil
	}
	return update, nil
}
