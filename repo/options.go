package repo

import (
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
