package encryption

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// pipeline rewrites the $match stages of an aggregation pipeline, and the
// query of $geoNear, as filters, refuses a $sort on an encrypted field, and refuses any stage
// that reads one ("$email", $$ROOT), since it would compute on
// ciphertexts. $facet's pipelines are checked the same way. When final
// (Check), it changes nothing and refuses a $match that was not rewritten.
func (x *Encryption) pipeline(p *encPlan, coll string, pipeline any, depth int, final bool) ([]bson.D, bool, error) {
	if depth > maxEncDepth {
		return nil, false, fmt.Errorf("encryption: pipeline nested deeper than %d levels: %w", maxEncDepth, mql.ErrBadDocument)
	}
	stages, err := mql.Stages(pipeline)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for i, st := range stages {
		for j, s := range st {
			v, ch, err := x.stage(p, coll, s, depth, final)
			if err != nil {
				return nil, false, fmt.Errorf("pipeline stage %d: %w", i, err)
			}
			if !ch {
				continue
			}
			if !changed { // Stages shares the caller's stages
				for k := range stages {
					stages[k] = slices.Clone(stages[k])
				}
			}
			stages[i][j].Value, changed = v, true
		}
	}
	return stages, changed, nil
}

// stage rewrites or refuses stage s of a pipeline (see pipeline), and
// returns its new value when it changed.
func (x *Encryption) stage(p *encPlan, coll string, s bson.E, depth int, final bool) (any, bool, error) {
	switch s.Key {
	case "$match":
		if final {
			return nil, false, p.checkFilter(s.Value, 0)
		}
		return x.filter(p, coll, s.Value, 0)
	case "$sort":
		return nil, false, p.checkSort(s.Value)
	case "$geoNear":
		return x.geoNearStage(p, coll, s, final)
	case "$facet":
		return x.facet(p, coll, s.Value, depth, final)
	case "$out", "$merge":
		return nil, false, fmt.Errorf("encryption: %s on a model with encrypted fields would store what the pipeline computes, plaintext included, unencrypted: %w", s.Key, ErrEncryptedField)
	}
	return nil, false, p.checkStage(s)
}

// geoNearStage rewrites the query of $geoNear stage s (unless final),
// then refuses the stage as rewritten if it reads an encrypted field.
func (x *Encryption) geoNearStage(p *encPlan, coll string, s bson.E, final bool) (any, bool, error) {
	var v bson.D
	var ch bool
	if !final {
		var err error
		if v, ch, err = x.geoNear(p, coll, s.Value); err != nil {
			return nil, false, err
		}
	}
	checked := s
	if ch {
		checked.Value = v
	}
	if err := p.checkStage(checked); err != nil {
		return nil, false, err
	}
	return v, ch, nil
}

// geoNear rewrites the filter in the query field of a $geoNear stage as
// $match's, and reports whether it changed.
func (x *Encryption) geoNear(p *encPlan, coll string, stage any) (bson.D, bool, error) {
	d, err := mql.ToD(stage)
	if err != nil {
		return nil, false, fmt.Errorf("encryption: $geoNear: %w: %w", ErrEncryptedField, err)
	}
	i := slices.IndexFunc(d, func(e bson.E) bool { return e.Key == "query" })
	if i < 0 {
		return d, false, nil
	}
	q, changed, err := x.filter(p, coll, d[i].Value, 0)
	if err != nil || !changed {
		return d, false, err
	}
	d = slices.Clone(d)
	d[i].Value = q
	return d, true, nil
}

func (x *Encryption) facet(p *encPlan, coll string, value any, depth int, final bool) (bson.D, bool, error) {
	d, err := mql.ToD(value)
	if err != nil {
		return nil, false, err
	}
	out, changed := make(bson.D, len(d)), false
	for i, f := range d {
		st, ch, err := x.pipeline(p, coll, f.Value, depth+1, final)
		if err != nil {
			return nil, false, fmt.Errorf("$facet %s: %w", f.Key, err)
		}
		out[i], changed = bson.E{Key: f.Key, Value: st}, changed || ch
	}
	return out, changed, nil
}

// checkStage refuses a stage that reads an encrypted field: by a "$field"
// path or $$ROOT anywhere in it, by a field name in the fields of $lookup
// and $graphLookup, or by a sub-field in the keys of the stages that
// shape documents.
func (p *encPlan) checkStage(s bson.E) error {
	if f := p.refersTo(s.Value, 0); f != nil {
		return refuseEncrypted(f.BSON, s.Key)
	}
	raw, err := bsonio.Marshal(registry, bson.D{s})
	if err != nil {
		return fmt.Errorf("encryption: stage %s: %w: %w", s.Key, ErrEncryptedField, err)
	}
	if err := p.scanStage(raw, 0); err != nil {
		return fmt.Errorf("%s: %w", s.Key, err)
	}
	d, err := mql.ToD(s.Value)
	if err != nil {
		return nil // $unset: "field", $count: "n", $limit: 5 ...
	}
	for _, k := range d {
		switch s.Key {
		case "$lookup", "$graphLookup":
			name, _ := k.Value.(string)
			if f, _ := p.lookup(name); f != nil && slices.Contains(joinFields, k.Key) {
				return refuseEncrypted(f.BSON, s.Key+" on "+name)
			}
		case "$project", "$addFields", "$set":
			if f, exact := p.lookup(k.Key); f != nil && !exact {
				return refuseEncrypted(f.BSON, s.Key+" of the sub-field "+k.Key)
			}
		}
	}
	return nil
}

// refersTo returns an encrypted field that v reads as an aggregation
// expression ("$email", "$email.x", or the whole document through $$ROOT
// or $$CURRENT) or names in the JavaScript of $function, or nil.
func (p *encPlan) refersTo(v any, depth int) *encField {
	if depth > maxEncDepth {
		return p.any()
	}
	switch t := v.(type) {
	case string:
		if strings.HasPrefix(t, "$$ROOT") || strings.HasPrefix(t, "$$CURRENT") {
			return p.any()
		}
		if path, ok := strings.CutPrefix(t, "$"); ok {
			f, _ := p.lookup(path)
			return f
		}
		return nil
	case primitive.JavaScript, primitive.CodeWithScope:
		return p.namedIn(fmt.Sprint(t)) // $function's body
	case bson.D, bson.M, map[string]any, bson.Raw:
		d, err := mql.ToD(v)
		if err != nil {
			return p.any()
		}
		for _, e := range d {
			if f := p.refersTo(e.Value, depth+1); f != nil {
				return f
			}
		}
		return nil
	}
	if a, err := mql.Array(v); err == nil {
		for _, e := range a {
			if f := p.refersTo(e, depth+1); f != nil {
				return f
			}
		}
	}
	return nil
}

// namedIn returns an encrypted field whose name the JavaScript code js
// holds, or nil.
func (p *encPlan) namedIn(js string) *encField {
	for _, f := range p.fields {
		if strings.Contains(js, f.BSON) {
			return f
		}
	}
	return nil
}

// any returns one of the encrypted fields.
func (p *encPlan) any() *encField {
	for _, f := range p.fields {
		return f
	}
	return nil
}

// preservesDocuments reports whether every stage of pipeline passes stored
// documents through unchanged, but for fields it drops: $match, $sort,
// $skip, $limit, $sample, and $project and $unset that only include or
// exclude fields. Only the results of such pipelines are decrypted: any
// other stage can plant a value, an _id, a collection's ciphertext in a
// result, and decrypting it would make the application an oracle for
// ciphertexts taken from a dump.
func preservesDocuments(pipeline any) bool {
	st, err := mql.Stages(pipeline)
	if err != nil {
		return false
	}
	for _, s := range st {
		if len(s) != 1 {
			return false
		}
		switch s[0].Key {
		case "$match", "$sort", "$skip", "$limit", "$sample":
		case "$project":
			if !fieldSelection(s[0].Value) {
				return false
			}
		case "$unset":
			if !fieldNames(s[0].Value) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// fieldSelection reports whether projection only includes or excludes
// fields: every value is 0, 1, true or false.
func fieldSelection(projection any) bool {
	d, err := mql.ToD(projection)
	if err != nil {
		return false
	}
	for _, e := range d {
		v, err := encodeValue(e.Value)
		if err != nil {
			return false
		}
		switch v.Type {
		case bson.TypeBoolean:
		case bson.TypeInt32, bson.TypeInt64:
			if n, _ := v.AsInt64OK(); n != 0 && n != 1 {
				return false
			}
		case bson.TypeDouble:
			if f := v.Double(); f != 0 && f != 1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// fieldNames reports whether v, the value of an $unset stage, is a field
// name or an array of them.
func fieldNames(v any) bool {
	if _, ok := v.(string); ok {
		return true
	}
	a, err := mql.Array(v)
	if err != nil {
		return false
	}
	for _, e := range a {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return true
}

// forbiddenOperators read fields by a computed name or in JavaScript, where
// no rewrite or check can follow them: refused anywhere in the queries of
// a model with encrypted fields.
var forbiddenOperators = []string{"$getField", "$jsonSchema", "$where", "$function", "$accumulator"}

// joinFields are the fields of $lookup and $graphLookup that name a field
// to compare by equality.
var joinFields = []string{"localField", "foreignField", "connectFromField", "connectToField"}

// refuseForbidden refuses v, a filter or a stage, when it uses one of
// forbiddenOperators anywhere, judged on the BSON the driver will send.
func (p *encPlan) refuseForbidden(v any) error {
	raw, err := bsonio.Marshal(registry, v)
	if err != nil {
		return fmt.Errorf("encryption: %w: %w", ErrEncryptedField, err)
	}
	if k := keyIn(raw, forbiddenOperators, 0); k != "" {
		return refuseEncrypted(p.any().BSON, k+" (it can read any field)")
	}
	return nil
}

// scanStage refuses, anywhere in doc (a stage, as sent): the
// forbiddenOperators; the searchStages; a sortBy ($setWindowFields, $top,
// $bottom, ...) naming an encrypted field; a $lookup or $graphLookup
// joining on one; and a condition on one in a filter that is not
// rewritten: a sub-pipeline's $match or $geoNear query, and
// restrictSearchWithMatch.
func (p *encPlan) scanStage(doc bson.Raw, depth int) error {
	if depth > maxEncDepth {
		return fmt.Errorf("encryption: stage nested deeper than %d levels: %w", maxEncDepth, mql.ErrBadDocument)
	}
	elems, err := doc.Elements()
	if err != nil {
		return err
	}
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		if slices.Contains(forbiddenOperators, key) {
			return refuseEncrypted(p.any().BSON, key+" (it can read any field)")
		}
		switch {
		case key == "sortBy" && v.Type == bson.TypeEmbeddedDocument:
			if err := p.checkSort(v.Document()); err != nil {
				return err
			}
		case slices.Contains(joinFields, key) && v.Type == bson.TypeString:
			if f, _ := p.lookup(v.StringValue()); f != nil {
				return refuseEncrypted(f.BSON, key)
			}
		case (key == "$match" || key == "restrictSearchWithMatch") && v.Type == bson.TypeEmbeddedDocument:
			if err := p.checkFilter(v.Document(), 0); err != nil {
				return fmt.Errorf("%s in a sub-pipeline (not rewritten): %w", key, err)
			}
		case key == "$geoNear" && v.Type == bson.TypeEmbeddedDocument:
			if err := p.checkGeoNear(v.Document()); err != nil {
				return err
			}
		case slices.Contains(searchStages, key):
			return fmt.Errorf("encryption: %s on a model with encrypted fields: its conditions name fields and values in a form the encryption cannot read or rewrite: %w", key, ErrEncryptedField)
		}
		switch v.Type {
		case bson.TypeEmbeddedDocument:
			err = p.scanStage(v.Document(), depth+1)
		case bson.TypeArray:
			err = p.scanStage(bson.Raw(v.Array()), depth+1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkGeoNear checks the query of a $geoNear stage as sent, stage: at the
// top of the pipeline it is rewritten before, in a sub-pipeline it is not.
func (p *encPlan) checkGeoNear(stage bson.Raw) error {
	q, err := stage.LookupErr("query")
	if err != nil {
		return nil
	}
	if q.Type != bson.TypeEmbeddedDocument {
		return fmt.Errorf("encryption: $geoNear query of type %v: %w", q.Type, ErrEncryptedField)
	}
	if err := p.checkFilter(q.Document(), 0); err != nil {
		return fmt.Errorf("$geoNear query: %w", err)
	}
	return nil
}

// searchStages are the stages of Atlas Search and Vector Search: their
// operators (text, phrase, a vector search's filter, ...) carry conditions
// on fields that the encryption neither rewrites nor checks, so they are
// refused on a model with encrypted fields.
var searchStages = []string{"$search", "$searchMeta", "$vectorSearch"}
