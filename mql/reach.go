package mql

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"go.mongodb.org/mongo-driver/bson"
)

// Reach is a stage of a pipeline that reads or writes a collection other
// than the documents flowing through the pipeline: $lookup, $graphLookup
// and $unionWith read one, $out and $merge write one. A policy governs a
// collection whatever pipeline reaches it, so it confines every Reach into
// a collection it governs, or refuses it (see Reaches).
type Reach struct {
	// Stage is the stage's name, such as "$lookup".
	Stage string
	// DB is the database the stage names, or "" for the pipeline's own.
	DB string
	// Coll is the collection the stage reads or writes, or "" when it
	// names none (a $lookup or $unionWith of a $documents pipeline).
	Coll string
	// Writes reports a stage that writes Coll ($out, $merge).
	Writes bool
	// Where says where the stage stands, for errors: "stage 2, $facet
	// byCity, stage 0".
	Where string

	spec bson.D // the stage's value, which Confine edits in place
}

// maxReachDepth bounds how deep Reaches follows sub-pipelines.
const maxReachDepth = 32

// Reaches returns pipeline (of any shape Stages reads) as new stages, and
// calls visit for every stage in it that reaches a collection, those in
// $facet and in the sub-pipelines of $lookup and $unionWith included, each
// before the ones nested in it. visit may Confine a Reach; the returned
// stages hold what it did, and pipeline itself is not changed. A stage
// that cannot be read as such (a reaching stage whose value is not a
// document or a name, a field given twice, nesting deeper than 32) is an
// error wrapping ErrBadDocument, as is the error visit returns, wrapped
// with where the stage stands.
func Reaches(pipeline any, visit func(*Reach) error) ([]bson.D, error) {
	st, err := reaches(pipeline, visit, "", 0)
	var v visitError
	if errors.As(err, &v) {
		return nil, v.err
	}
	return st, named(err)
}

// visitError carries the error of Reaches' visit out unchanged.
type visitError struct{ err error }

func (v visitError) Error() string { return v.err.Error() }

func reaches(pipeline any, visit func(*Reach) error, where string, depth int) ([]bson.D, error) {
	if depth > maxReachDepth {
		return nil, fmt.Errorf("pipeline nested deeper than %d levels: %w", maxReachDepth, ErrBadDocument)
	}
	st, err := stages(pipeline)
	if err != nil {
		if st, err = encodedStages(pipeline); err != nil {
			return nil, err
		}
	}
	for i := range st {
		st[i] = slices.Clone(st[i])
		at := fmt.Sprintf("%sstage %d", where, i)
		for j := range st[i] {
			v, err := reachStage(st[i][j], visit, at, depth)
			if err != nil {
				return nil, err
			}
			st[i][j].Value = v
		}
	}
	return st, nil
}

// encodedStages reads pipeline from its encoding, for shapes that Stages
// does not take apart (a pointer to a slice, say) but the driver encodes.
func encodedStages(pipeline any) ([]bson.D, error) {
	raw, err := bsonio.Marshal(registry, bson.D{{Key: "pipeline", Value: pipeline}})
	if err != nil {
		return nil, fmt.Errorf("pipeline of type %T: %w: %w", pipeline, ErrBadDocument, err)
	}
	v, err := raw.LookupErr("pipeline")
	if err != nil || v.Type != bson.TypeArray {
		return nil, fmt.Errorf("pipeline of type %T is not an array: %w", pipeline, ErrBadDocument)
	}
	return stages(bson.Raw(v.Array()))
}

// reachStage visits stage s when it reaches a collection, and follows
// its sub-pipelines; it returns the stage's value as it is to be sent.
func reachStage(s bson.E, visit func(*Reach) error, at string, depth int) (any, error) {
	switch s.Key {
	case "$facet":
		spec, err := spec(s)
		if err != nil {
			return nil, err
		}
		for k := range spec {
			sub, err := reaches(spec[k].Value, visit, fmt.Sprintf("%s, $facet %s, ", at, spec[k].Key), depth+1)
			if err != nil {
				return nil, err
			}
			spec[k].Value = sub
		}
		return spec, nil
	case "$lookup", "$graphLookup", "$unionWith", "$out", "$merge":
	default:
		return s.Value, nil
	}
	r, err := newReach(s, at)
	if err != nil {
		return nil, err
	}
	if err := visit(r); err != nil {
		return nil, visitError{err}
	}
	if r.Writes {
		return s.Value, nil // sent as given: no writing stage is confined
	}
	if i := r.index("pipeline"); i >= 0 {
		sub, err := reaches(r.spec[i].Value, visit, fmt.Sprintf("%s, %s pipeline, ", at, r.Stage), depth+1)
		if err != nil {
			return nil, err
		}
		r.spec[i].Value = sub
	}
	return r.spec, nil
}

// spec returns a stage's value as a new document whose fields are each
// named once.
func spec(s bson.E) (bson.D, error) {
	d, err := toD(s.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Key, err)
	}
	d = slices.Clone(d)
	for i := range d {
		if slices.ContainsFunc(d[:i], func(e bson.E) bool { return e.Key == d[i].Key }) {
			return nil, fmt.Errorf("%s names field %q twice: %w", s.Key, d[i].Key, ErrBadDocument)
		}
	}
	return d, nil
}

// newReach reads a reaching stage: its value is a collection's name, or a
// document that names one.
func newReach(s bson.E, at string) (*Reach, error) {
	r := &Reach{Stage: s.Key, Writes: s.Key == "$out" || s.Key == "$merge", Where: at}
	if name, ok := s.Value.(string); ok && s.Key != "$lookup" && s.Key != "$graphLookup" {
		r.Coll = name
		r.spec = bson.D{{Key: "coll", Value: name}} // $unionWith's long form
		return r, nil
	}
	d, err := spec(s)
	if err != nil {
		return nil, err
	}
	r.spec = d
	key := map[string]string{"$lookup": "from", "$graphLookup": "from", "$unionWith": "coll", "$out": "coll", "$merge": "into"}[s.Key]
	i := r.index(key)
	if i < 0 {
		if s.Key == "$lookup" || s.Key == "$unionWith" {
			return r, nil // a $documents pipeline: no collection
		}
		return nil, fmt.Errorf("%s without %q: %w", s.Key, key, ErrBadDocument)
	}
	switch v := d[i].Value.(type) {
	case string:
		r.Coll = v
	default:
		target, err := spec(bson.E{Key: s.Key + "." + key, Value: v})
		if err != nil {
			return nil, err
		}
		for _, e := range target {
			name, ok := e.Value.(string)
			switch {
			case !ok || (e.Key != "db" && e.Key != "coll"):
				return nil, fmt.Errorf("%s.%s: field %q is not a database or collection name: %w", s.Key, key, e.Key, ErrBadDocument)
			case e.Key == "db":
				r.DB = name
			default:
				r.Coll = name
			}
		}
	}
	if r.Coll == "" {
		return nil, fmt.Errorf("%s names no collection: %w", s.Key, ErrBadDocument)
	}
	if i := r.index("db"); i >= 0 { // {$out: {db, coll}}: the database beside the collection
		name, ok := d[i].Value.(string)
		if !ok || r.DB != "" {
			return nil, fmt.Errorf("%s names its database twice, or not by name: %w", s.Key, ErrBadDocument)
		}
		r.DB = name
	}
	return r, nil
}

func (r *Reach) index(key string) int {
	return slices.IndexFunc(r.spec, func(e bson.E) bool { return e.Key == key })
}

// Confine makes the stage read only the documents of its collection that
// match cond: it puts {$match: {cond}} first in the sub-pipeline of a
// $lookup or $unionWith (a $lookup by localField and foreignField gets a
// pipeline of that one stage, which MongoDB 5.0 and later run beside the
// join), and ANDs cond onto the restrictSearchWithMatch of a $graphLookup.
// A writing stage cannot be confined: the error wraps ErrBadDocument.
func (r *Reach) Confine(cond bson.E) error {
	if r.Writes {
		return fmt.Errorf("%s writes collection %q and cannot be confined: %w", r.Stage, r.Coll, ErrBadDocument)
	}
	if r.Stage == "$graphLookup" {
		i := r.index("restrictSearchWithMatch")
		if i < 0 {
			r.spec = append(r.spec, bson.E{Key: "restrictSearchWithMatch", Value: bson.D{cond}})
			return nil
		}
		r.spec[i].Value = And(r.spec[i].Value, cond)
		return nil
	}
	i := r.index("pipeline")
	if i < 0 {
		r.spec = append(r.spec, bson.E{Key: "pipeline", Value: []bson.D{{{Key: "$match", Value: bson.D{cond}}}}})
		return nil
	}
	p, err := PrependMatch(r.spec[i].Value, cond)
	if err != nil {
		return err
	}
	r.spec[i].Value = p
	return nil
}

// Confined reports whether the stage reads only documents that match
// cond, as Confine makes it: a policy's Check asks it after every listener
// has run.
func (r *Reach) Confined(cond bson.E) (bool, error) {
	if r.Writes {
		return false, nil
	}
	if r.Stage == "$graphLookup" {
		i := r.index("restrictSearchWithMatch")
		if i < 0 {
			return false, nil
		}
		return Requires(r.spec[i].Value, cond)
	}
	i := r.index("pipeline")
	if i < 0 {
		return false, nil
	}
	return LeadingMatchRequires(r.spec[i].Value, cond)
}

// Spec returns the stage's value as it is to be sent, for a policy that
// checks more of it than its collection (such as the fields a $lookup
// joins on). It is the Reach's own: change it only through Confine.
func (r *Reach) Spec() bson.D { return r.spec }
