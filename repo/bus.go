package repo

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/mongo"
)

// What a repository asks of its bus's listeners besides events.

// prepare calls Prepare on every events.Preparer among regs, for model
// type t and the repository's collection coll.
func prepare(regs []events.Registration, t reflect.Type, coll *mongo.Collection) error {
	for _, r := range regs {
		if p, ok := r.Listener.(events.Preparer); ok {
			if err := p.Prepare(t, coll); err != nil {
				return err
			}
		}
	}
	return nil
}

// enforces reports whether a policy among regs enforces tag (see
// events.TagEnforcer), for every event it handles: one restricted to some
// event types (events.On) would leave the others unconfined.
func enforces(regs []events.Registration, tag string) bool {
	for _, r := range regs {
		if !r.Policy || r.Restricted {
			continue
		}
		if te, ok := r.Listener.(events.TagEnforcer); ok && slices.Contains(te.EnforcesTags(), tag) {
			return true
		}
	}
	return false
}

// misbound refuses a model with a field whose struct tag has a key that
// is the name of a policy among regs (events.TagEnforcer), such as
// region:"eu" beside a policy "region": a policy reads only policy:"NAME"
// tags, so no listener would read the key, and the field would go
// unprotected without an error. Every TagEnforcer among regs counts,
// restricted or not, since the key is a mistake whether or not the policy
// enforces its tags for every event. The error wraps model.ErrInvalidTag,
// not ErrUnenforced: the policy is on the bus, and it is the model's tag
// that is wrong, so Unenforced does not lift it; rename the key.
func misbound(regs []events.Registration, s *model.Schema) error {
	for _, ft := range s.OtherTags {
		for _, r := range regs {
			te, ok := r.Listener.(events.TagEnforcer)
			if !ok || !slices.Contains(te.EnforcesTags(), ft.Key) {
				continue
			}
			return fmt.Errorf("field %s: tag %s is not read by any listener; policy %q binds fields with policy:%q (docs/policies.md#registration): %w",
				ft.Field, ft.Tag, ft.Key, ft.Key, model.ErrInvalidTag)
		}
	}
	return nil
}

// handleWriteError asks every events.WriteErrorHandler of the model
// whether the failed write err can be retried. It reports retry when at
// least one of them repaired something.
func (r *Repository[T]) handleWriteError(ctx context.Context, e *events.Event, err error) (retry bool, _ error) {
	for _, reg := range r.bus.Listeners(e.ModelType) {
		h, ok := reg.Listener.(events.WriteErrorHandler)
		if !ok {
			continue
		}
		again, herr := h.HandleWriteError(ctx, e, err)
		if herr != nil {
			return false, herr
		}
		retry = retry || again
	}
	return retry, nil
}

// zeroAuto returns a bit mask of s's auto fields (by position in s.Auto)
// that are zero in m, a pointer of type s.Type, so that a retried write can
// reset exactly the keys that were filled in for it.
func zeroAuto(s *model.Schema, m reflect.Value) uint64 {
	v := m.Elem()
	var mask uint64
	for i := range s.Auto {
		if s.Auto[i].Value(v).IsZero() {
			mask |= 1 << i
		}
	}
	return mask
}

// resetAuto sets to zero the auto fields of m named by mask.
func resetAuto(s *model.Schema, m reflect.Value, mask uint64) {
	v := m.Elem()
	for i := range s.Auto {
		if mask&(1<<i) != 0 {
			s.Auto[i].Value(v).SetZero()
		}
	}
}
