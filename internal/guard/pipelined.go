package guard

import (
	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
)

// Pipelined reports whether e's query is its Pipeline (Aggregate, Watch)
// rather than its Filter, which is then nil: a policy confines the
// pipeline, with a leading $match.
func Pipelined(e *events.Event) bool { return e.Op == events.OpAggregate || e.Op == events.OpWatch }

// Stored returns cond, a condition on a stored document's field, as e's
// pipeline states it: under "fullDocument." for a change stream (Watch),
// whose stages see change events, and as it is for an Aggregate.
func Stored(e *events.Event, cond bson.E) bson.E {
	if e.Op == events.OpWatch {
		cond.Key = "fullDocument." + cond.Key
	}
	return cond
}
