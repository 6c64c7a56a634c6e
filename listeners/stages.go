package listeners

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// ErrUnguardedQuery: the operation uses something a policy cannot confine:
// an aggregate stage that reaches another collection ($lookup,
// $graphLookup, $unionWith, $out, $merge), or, for Tenancy, a collation
// under which the tenant's equality could match other tenants.
var ErrUnguardedQuery = errors.New("listeners: query not confined by the policy")

// The stages that read another collection, and those that write one.
var (
	readingStages = []string{"$lookup", "$graphLookup", "$unionWith"}
	writingStages = []string{"$out", "$merge"}
)

// refuseStages returns an error wrapping ErrUnguardedQuery when any of
// names is used anywhere in pipeline ($facet and sub-pipelines included),
// judged on the BSON the driver will send, or when the pipeline cannot be
// read.
func refuseStages(pipeline any, why string, names ...string) error {
	st, err := mql.Stages(pipeline)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnguardedQuery, err)
	}
	for i, s := range st {
		raw, err := bsonio.Marshal(registry, s)
		if err != nil {
			return fmt.Errorf("%w: pipeline stage %d: %w", ErrUnguardedQuery, i, err)
		}
		if k := keyIn(raw, names, 0); k != "" {
			return fmt.Errorf("%w: %s %s", ErrUnguardedQuery, k, why)
		}
	}
	return nil
}

// keyIn returns the first of names that is a key anywhere in doc.
func keyIn(doc bson.Raw, names []string, depth int) string {
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
		if k := keyIn(sub, names, depth+1); k != "" {
			return k
		}
	}
	return ""
}
