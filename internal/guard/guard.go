// Package guard holds what the policies share: finding stages and keys in
// the BSON a query will send, and confining a pipeline with a leading
// $match.
package guard

import (
	"fmt"
	"slices"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// ReadingStages read another collection, and WritingStages write one.
var (
	ReadingStages = []string{"$lookup", "$graphLookup", "$unionWith"}
	WritingStages = []string{"$out", "$merge"}
)

// RefuseStages returns an error wrapping events.ErrUnguardedQuery when any of
// names is used anywhere in pipeline ($facet and sub-pipelines included),
// judged on the BSON the driver will send, or when the pipeline cannot be
// read.
func RefuseStages(pipeline any, why string, names ...string) error {
	st, err := mql.Stages(pipeline)
	if err != nil {
		return fmt.Errorf("%w: %w", events.ErrUnguardedQuery, err)
	}
	for i, s := range st {
		raw, err := bsonio.Marshal(registry, s)
		if err != nil {
			return fmt.Errorf("%w: pipeline stage %d: %w", events.ErrUnguardedQuery, i, err)
		}
		if k := KeyIn(raw, names, 0); k != "" {
			return fmt.Errorf("%w: %s %s", events.ErrUnguardedQuery, k, why)
		}
	}
	return nil
}

// KeyIn returns the first of names that is a key anywhere in doc.
func KeyIn(doc bson.Raw, names []string, depth int) string {
	if depth > 100 {
		return "(nesting deeper than 100)"
	}
	elems, err := doc.Elements()
	if err != nil {
		return "(unreadable BSON)"
	}
	for _, el := range elems {
		if slices.Contains(names, el.Key()) {
			return el.Key()
		}
		v := el.Value()
		var sub bson.Raw
		switch v.Type {
		case bson.TypeEmbeddedDocument:
			sub = v.Document()
		case bson.TypeArray:
			sub = bson.Raw(v.Array())
		default:
			continue
		}
		if k := KeyIn(sub, names, depth+1); k != "" {
			return k
		}
	}
	return ""
}

var registry = model.Registry()
