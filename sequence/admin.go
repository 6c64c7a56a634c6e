package sequence

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Current returns the last number reserved by any process, or Start()-1
// when none was. Numbers cached by processes are reserved, so the next
// number handed out anywhere is greater.
func (s *Sequence) Current(ctx context.Context) (int64, error) {
	st, err := s.a.getStore(ctx)
	if err != nil {
		return 0, err
	}
	v, err := st.current(ctx, s)
	if err != nil {
		return 0, fmt.Errorf("sequence %q: reading the counter: %w", s.name, err)
	}
	return v, nil
}

// AdvancePast makes every number handed out from now on greater than v, in
// all processes: the counter is moved to at least v, and this process's
// cached blocks are dropped. Other processes drop theirs when a write of
// theirs fails on a duplicate key (see autokeys.Keys).
func (s *Sequence) AdvancePast(ctx context.Context, v int64) error {
	return s.move(ctx, v, false)
}

func (s *Sequence) move(ctx context.Context, v int64, force bool) error {
	st, err := s.a.getStore(ctx)
	if err != nil {
		return err
	}
	s.invalidate() // stop handing out cached numbers now
	last, err := st.advance(ctx, s, v, force)
	if err != nil {
		return fmt.Errorf("sequence %q: moving the counter to %d: %w", s.name, v, err)
	}
	s.mu.Lock()
	s.invalidateLocked() // and blocks fetched from the old place meanwhile
	s.own = last         // where the store says the next block may start
	s.mu.Unlock()
	return nil
}

// SetNext makes next the next number handed out. It is refused below the
// current counter, and below the data's maximum with WithDataCheck, unless
// WithForce.
func (s *Sequence) SetNext(ctx context.Context, next int64, opts ...Option) error {
	var c config
	if err := c.apply(forSetNext, opts); err != nil {
		return fmt.Errorf("sequence %q: SetNext: %w", s.name, err)
	}
	if next < 1 {
		return fmt.Errorf("sequence %q: SetNext(%d): want ≥ 1: %w", s.name, next, ErrInvalidArgument)
	}
	if !c.force {
		cur, err := s.Current(ctx)
		if err != nil {
			return err
		}
		if next <= cur {
			return fmt.Errorf("sequence %q: SetNext(%d): numbers up to %d are already reserved; use WithForce to go back: %w", s.name, next, cur, ErrBelowData)
		}
		if c.dataColl != nil {
			top, ok, err := MaxOf(ctx, c.dataColl, c.dataField)
			if err != nil {
				return err
			}
			if ok && next <= top {
				return fmt.Errorf("sequence %q: SetNext(%d): %s.%s already holds %d: %w", s.name, next, c.dataColl.Name(), c.dataField, top, ErrBelowData)
			}
		}
	}
	return s.move(ctx, next-1, c.force)
}

// InitFromData moves the counter past the largest value of field in coll,
// for a team adopting the library on a populated collection. It returns the
// next number that will be handed out.
func (s *Sequence) InitFromData(ctx context.Context, coll *mongo.Collection, field string) (int64, error) {
	top, ok, err := MaxOf(ctx, coll, field)
	if err != nil {
		return 0, err
	}
	if ok {
		if err := s.AdvancePast(ctx, top); err != nil {
			return 0, err
		}
	}
	cur, err := s.Current(ctx)
	return cur + 1, err
}

// MaxOf returns the largest integer value of field in coll; ok is false
// when no document has a number there.
func MaxOf(ctx context.Context, coll *mongo.Collection, field string) (top int64, ok bool, err error) {
	return MaxOfWhere(ctx, coll, field, nil)
}

// MaxOfWhere is MaxOf among the documents that also match the equality
// conditions where, such as one tenant's documents.
func MaxOfWhere(ctx context.Context, coll *mongo.Collection, field string, where bson.D) (top int64, ok bool, err error) {
	if coll == nil || field == "" {
		return 0, false, fmt.Errorf("sequence: MaxOf: need a collection and a field: %w", ErrInvalidArgument)
	}
	var doc bson.Raw
	filter := append(bson.D{{Key: field, Value: bson.D{{Key: "$type", Value: "number"}}}}, where...)
	err = coll.FindOne(ctx, filter, options.FindOne().
		SetSort(bson.D{{Key: field, Value: -1}}).
		SetProjection(bson.D{{Key: field, Value: 1}})).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("sequence: reading the largest %s in %s: %w", field, coll.Name(), err)
	}
	v, err := doc.LookupErr(field)
	if err != nil {
		return 0, false, nil
	}
	n, ok := v.AsInt64OK()
	if !ok {
		if f, fok := v.DoubleOK(); fok {
			return int64(f), true, nil
		}
	}
	return n, ok, nil
}
