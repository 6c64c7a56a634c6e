package mql

import "go.mongodb.org/mongo-driver/bson"

// PrependMatch returns pipeline (of any shape Stages reads) with a first
// stage {$match: {cond}}, so that the documents cond excludes never reach
// the other stages: how a policy confines an Aggregate as And confines a
// filter.
func PrependMatch(pipeline any, cond bson.E) ([]bson.D, error) {
	st, err := stages(pipeline)
	if err != nil {
		return nil, named(err)
	}
	return append([]bson.D{{{Key: "$match", Value: bson.D{cond}}}}, st...), nil
}

// LeadingMatchRequires reports whether one of the $match stages that open
// pipeline requires cond (see Requires): what a policy's Check asks of an
// Aggregate after every listener has run.
func LeadingMatchRequires(pipeline any, cond bson.E) (bool, error) {
	st, err := stages(pipeline)
	if err != nil {
		return false, named(err)
	}
	for _, s := range st {
		if len(s) != 1 || s[0].Key != "$match" {
			break
		}
		if ok, err := requires(s[0].Value, cond, 0); ok || err != nil {
			return ok, named(err)
		}
	}
	return false, nil
}
