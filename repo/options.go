package repo

import (
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// lastOpt returns what get gives for the last of opts that sets it, as the
// driver merges options.
func lastOpt[O any, V comparable](opts []*O, get func(*O) V) V {
	var v, zero V
	for _, o := range opts {
		if o != nil {
			if x := get(o); x != zero {
				v = x
			}
		}
	}
	return v
}

// describe tells a query event's listeners the sort, the projection and
// the collation the options ask for; sort and proj may be nil for options
// that have none.
func describe[O any](e *events.Event, opts []*O, sort, proj func(*O) any, coll func(*O) *options.Collation) {
	if e == nil {
		return
	}
	if sort != nil {
		e.Sort = lastOpt(opts, sort)
	}
	if proj != nil {
		e.Projection = lastOpt(opts, proj)
	}
	e.Collation = lastOpt(opts, coll)
}

// carryOptions sets in dst, the options of the operation the repository
// sends instead of the caller's (an update instead of a replace or a
// delete), every option of opts that dst has too, by name and type, the
// last one set winning as the driver merges them. It runs only on those
// paths, where a reflective copy costs nothing that matters.
func carryOptions[S, D any](dst *D, opts []*S) *D {
	dv := reflect.ValueOf(dst).Elem()
	for _, o := range opts {
		if o == nil {
			continue
		}
		sv := reflect.ValueOf(o).Elem()
		for i := range sv.NumField() {
			f := sv.Field(i)
			if f.IsZero() {
				continue
			}
			if d := dv.FieldByName(sv.Type().Field(i).Name); d.IsValid() && d.Type() == f.Type() && d.CanSet() {
				d.Set(f)
			}
		}
	}
	return dst
}

// sortOf returns o's Sort when its type has one: driver v2's
// UpdateOneOptions and ReplaceOptions do, driver v1's UpdateOptions and
// ReplaceOptions do not. Listeners then judge the sort of every write the
// driver sends one with, as they judge FindOneAndUpdate's.
func sortOf[O any](o *O) any {
	f := reflect.ValueOf(o).Elem().FieldByName("Sort")
	if !f.IsValid() || f.Kind() != reflect.Interface || f.IsNil() {
		return nil
	}
	return f.Interface()
}
