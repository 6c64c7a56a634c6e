package autokeys

import (
	"context"
	"reflect"
	"sync"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/mgmevents/mgmevents/sequence"
)

// An upsert gets its keys before the server says whether it inserts, so
// each inc field's number is reserved on every call. When an UpdateOne or
// UpdateMany upsert matched instead (AfterUpdate's UpsertedCount is 0), its
// numbers were stored nowhere, and each is put back into its sequence
// (sequence.Sequence.PutBack): the next key is that number again, unless
// another goroutine took a number after it meanwhile, or the sequence has
// batch 1. A FindOneAndUpdate's reply does not say whether it inserted,
// and a failed upsert may have, so their numbers are not put back: a gap.

// maxUpserts bounds the upserts whose numbers Keys remembers at once. An
// upsert that fails leaves its record until its Event runs another update;
// past the bound they are all dropped, and their numbers are gaps.
const maxUpserts = 4096

// taken is one number an upsert reserved.
type taken struct {
	seq *sequence.Sequence
	n   int64
}

// upserts holds the numbers each running upsert reserved, by its Event,
// which one operation has to itself from BeforeUpdate to AfterUpdate.
type upserts struct {
	mu sync.Mutex
	m  map[*events.Event][]taken
}

func (u *upserts) set(e *events.Event, ns []taken) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(ns) == 0 {
		delete(u.m, e)
		return
	}
	if u.m == nil || len(u.m) >= maxUpserts {
		u.m = map[*events.Event][]taken{}
	}
	u.m[e] = ns
}

func (u *upserts) take(e *events.Event) []taken {
	u.mu.Lock()
	defer u.mu.Unlock()
	ns := u.m[e]
	delete(u.m, e)
	return ns
}

// upsert gives the document an upsert may insert its keys, as
// $setOnInsert fields: each inc and uuid field that neither the update nor
// the filter's equalities (which the repository adds as $setOnInsert)
// already set. It remembers the numbers, to put them back if the upsert
// matches.
func (k *Keys) upsert(ctx context.Context, e *events.Event) error {
	k.upserts.set(e, nil) // a record an earlier, failed operation left
	if !e.Upsert {
		return nil
	}
	p, t, err := k.ready(ctx, e)
	if p == nil {
		return err
	}
	u, err := mql.ParseUpdate(e.Update)
	if err != nil {
		return err
	}
	var took []taken
	for _, f := range p.fields {
		if u.Touches(f.BSON) {
			if err := k.refuseTopKeyIn(ctx, p, t, f, e, u); err != nil {
				return err
			}
			continue
		}
		sc, err := k.upsertScope(ctx, p, f, e.Filter, u)
		if err != nil {
			k.putBackAll(took)
			return err
		}
		fv := reflect.New(f.Type).Elem()
		if took, err = k.upsertKey(ctx, p, t, f, sc, fv, took); err != nil {
			k.putBackAll(took)
			return err
		}
		if err := u.Add("$setOnInsert", f.BSON, fv.Interface()); err != nil {
			k.putBackAll(took)
			return err
		}
	}
	e.Update = u.Value()
	if e.Op == events.OpUpdateOne || e.Op == events.OpUpdateMany {
		k.upserts.set(e, took)
	}
	return nil
}

// upsertKey sets fv, the zero value of field f, to a new key, and returns
// took with the number it reserved, for an inc field.
func (k *Keys) upsertKey(ctx context.Context, p *plan, t *target, f *fieldPlan, sc scope, fv reflect.Value, took []taken) ([]taken, error) {
	if f.Kind != model.Inc {
		one := [1]reflect.Value{fv}
		return took, k.fillValues(ctx, p, t, f, sc, one[:])
	}
	seq, period, err := k.sequenceFor(ctx, p, t, f, sc)
	if err != nil {
		return took, err
	}
	n, err := seq.Next(ctx)
	if err != nil {
		return took, fieldErr(p, f, err)
	}
	took = append(took, taken{seq, n})
	return took, k.setNumber(p, f, seq, fv, period, n)
}

// putBack puts back the numbers of an upsert that matched, on AfterUpdate.
func (k *Keys) putBack(e *events.Event) {
	if !e.Upsert {
		return
	}
	took := k.upserts.take(e)
	if e.UpsertedCount == 0 {
		k.putBackAll(took)
	}
}

// putBackAll puts back took's numbers, the last taken first.
func (k *Keys) putBackAll(took []taken) {
	for i := len(took) - 1; i >= 0; i-- {
		took[i].seq.PutBack(took[i].n)
	}
}
