package repo

import (
	"fmt"
	"slices"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mql"
)

// checkReaches refuses a pipeline of r with a stage that reaches a
// collection which a model with policy tags serves in this process,
// when no policy that runs for r's model enforces those tags: the
// policies judge the stages of the events they see, so a policy
// registered for some models only (events.ForModel), or a repository on
// a bus without it, would send the stage unconfined. Unenforced(tag) lets
// a tag go, knowingly.
func (r *Repository[T]) checkReaches(pipeline any) error {
	db := r.coll.Database().Name()
	var regs []events.Registration // read once, when a stage needs them
	_, err := mql.Reaches(pipeline, func(s *mql.Reach) error {
		in := db
		if s.DB != "" {
			in = s.DB
		}
		if s.Coll == "" {
			return nil
		}
		for _, tag := range governedBy(in, s.Coll) {
			if regs == nil {
				regs = r.bus.Listeners(r.schema.Type)
			}
			if !enforces(regs, tag) && !slices.Contains(r.unenforced, tag) {
				return fmt.Errorf("%s: %s reaches collection %q of database %q, whose models need a policy for %q, and none on this repository's bus runs for %v: the stage would be sent unconfined; register that policy for every model: %w",
					s.Where, s.Stage, s.Coll, in, tag, r.schema.Type, ErrUnenforced)
			}
		}
		return nil
	})
	return err
}
