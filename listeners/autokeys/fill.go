package autokeys

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/sequence"
)

// Filling keys: numbers from the field's sequence (its scope's, its
// period's), order numbers made from them, and UUIDs.

// setNumber stores n, or the order number made from it, in fv.
func (k *Keys) setNumber(p *plan, f *fieldPlan, seq *sequence.Sequence, fv reflect.Value, period string, n int64) error {
	switch {
	case f.Format != nil:
		fv.SetString(string(f.Format.Append(make([]byte, 0, 32), period, n)))
	case uint64(n) > f.Max:
		return fmt.Errorf("%v field %s: sequence %q reached %d, which does not fit in %v: %w",
			p.schema.Type, f.Name, seq.Name(), n, fv.Type(), sequence.ErrOverflow)
	case fv.CanInt():
		fv.SetInt(n)
	default:
		fv.SetUint(uint64(n))
	}
	return nil
}

// fill sets field f in every model of models where it is zero, with one
// reservation per scope at most. Every scope is read before any number is
// reserved, so a batch with an empty scope field uses up none.
func (k *Keys) fill(ctx context.Context, p *plan, t *target, f *fieldPlan, models []any) error {
	var scopes []scope
	byScope := map[string][]reflect.Value{}
	for _, m := range models {
		mv := reflect.ValueOf(m).Elem()
		fv := f.Value(mv)
		if !fv.IsZero() {
			continue
		}
		sc, err := k.scopeOf(ctx, p, f, mv)
		if err != nil {
			return err
		}
		if _, ok := byScope[sc.key]; !ok {
			scopes = append(scopes, sc)
		}
		byScope[sc.key] = append(byScope[sc.key], fv)
	}
	for _, sc := range scopes {
		if err := k.fillValues(ctx, p, t, f, sc, byScope[sc.key]); err != nil {
			return err
		}
	}
	return nil
}

// fillValues gives each of the zero fields targets a key, from sc's
// sequence for a scoped field; the numbers come from one reservation at
// most.
func (k *Keys) fillValues(ctx context.Context, p *plan, t *target, f *fieldPlan, sc scope, targets []reflect.Value) error {
	if len(targets) == 0 {
		return nil
	}
	if f.Kind == model.UUID {
		for _, fv := range targets {
			if err := setUUID(fv, f.AutoField); err != nil {
				return fieldErr(p, f, err)
			}
		}
		return nil
	}
	seq, period, err := k.sequenceFor(ctx, p, t, f, sc)
	if err != nil {
		return err
	}
	var one [1]int64
	nums := one[:]
	if len(targets) > 1 {
		nums = make([]int64, len(targets))
	}
	if err := seq.NextN(ctx, nums); err != nil {
		return fieldErr(p, f, err)
	}
	for i, fv := range targets {
		if err := k.setNumber(p, f, seq, fv, period, nums[i]); err != nil {
			return err
		}
	}
	return nil
}

// sequenceFor returns the sequence for f now: with a dated format, the
// period's own sequence; for a scoped field, the scope's own
// ("<seq>@<tenant>~<value>..."), which is first moved past that scope's
// data in t.
func (k *Keys) sequenceFor(ctx context.Context, p *plan, t *target, f *fieldPlan, sc scope) (*sequence.Sequence, string, error) {
	dated := f.Format != nil && f.Format.Layout != ""
	if !dated && !scoped(f) {
		return f.seq, "", nil
	}
	var period string
	key := sc.key
	if dated {
		period = f.Format.Period(k.now())
		key += "/" + period
	}
	ck := seqKey{t: t, key: key}
	if s, ok := f.periods.load(ck); ok {
		return s, period, nil
	}
	s, err := k.alloc.Sequence(f.Seq+key, f.opts...)
	if err != nil {
		return nil, "", fieldErr(p, f, err)
	}
	if scoped(f) && f.Format == nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_, err := k.heal(dctx, p, t, f, s, sc, 0)
		cancel()
		if err != nil {
			return nil, "", err
		}
	}
	return f.periods.store(ck, s), period, nil
}

func setUUID(fv reflect.Value, a *model.AutoField) error {
	var u uuid.UUID
	var err error
	if a.V7 {
		u, err = uuid.NewV7()
	} else {
		u, err = uuid.NewRandom()
	}
	if err != nil {
		return err
	}
	if fv.Kind() != reflect.String {
		fv.Set(reflect.ValueOf(u).Convert(fv.Type()))
		return nil
	}
	if a.Compact {
		var buf [32]byte
		const hex = "0123456789abcdef"
		for i, b := range u {
			buf[2*i], buf[2*i+1] = hex[b>>4], hex[b&15]
		}
		fv.SetString(string(buf[:]))
	} else {
		fv.SetString(u.String())
	}
	return nil
}
