package encryption

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/internal/guard"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// refuseEncrypted is the error for what cannot be done on encrypted field field.
func refuseEncrypted(field, what string) error {
	return fmt.Errorf("encryption: %s on encrypted field %q cannot be answered: %w", what, field, ErrEncryptedField)
}

// lookup returns the encrypted field path names or lies in, and whether
// path is the field itself rather than a part of it.
func (p *encPlan) lookup(path string) (*model.EncryptedField, bool) {
	top, _, _ := strings.Cut(path, ".")
	f := p.fields[top]
	return f, f != nil && top == path
}

// query rewrites or refuses what a BeforeQuery event would send: its
// filter, its pipeline, its sort and the field of a Distinct.
func (x *Encryption) query(p *encPlan, e *events.Event) error {
	if err := p.checkOptions(e); err != nil {
		return err
	}
	if e.Op == events.OpWatch {
		return p.refuseInChangeStream(e.Pipeline)
	}
	if e.Filter != nil {
		f, changed, err := x.filter(p, e.Collection, e.Filter, 0)
		if err != nil {
			return err
		}
		if changed {
			if err := p.refuseCollation(e); err != nil {
				return err
			}
			e.Filter = f
		}
	}
	if e.Pipeline != nil {
		st, changed, err := x.pipeline(p, e.Collection, e.Pipeline, 0, false)
		if err != nil {
			return err
		}
		if changed {
			if err := p.refuseCollation(e); err != nil {
				return err
			}
			e.Pipeline = st
		}
	}
	return nil
}

// checkOptions refuses what a query's options and Distinct's field ask of
// an encrypted field, or a projection that computes values.
func (p *encPlan) checkOptions(e *events.Event) error {
	if e.Field != "" {
		if f, _ := p.lookup(e.Field); f != nil {
			return refuseEncrypted(f.BSON, "Distinct")
		}
	}
	if err := p.checkSort(e.Sort); err != nil {
		return err
	}
	if e.Projection != nil && !fieldSelection(e.Projection) {
		return fmt.Errorf("encryption: a projection that computes values (MongoDB 4.4+ evaluates expressions such as $literal in it) on a model with encrypted fields: only inclusion and exclusion (0, 1, true, false) are allowed: %w", ErrEncryptedField)
	}
	return nil
}

// checkSort refuses a sort on an encrypted field: ciphertexts are random.
func (p *encPlan) checkSort(sort any) error {
	if sort == nil {
		return nil
	}
	d, err := mql.ToD(sort)
	if err != nil {
		return err
	}
	for _, k := range d {
		if f, _ := p.lookup(k.Key); f != nil {
			return refuseEncrypted(f.BSON, "a sort")
		}
	}
	return nil
}

const maxEncDepth = 100

// filter rewrites equalities on eq fields into blind-index lookups, also
// inside $and, $or and $nor, and refuses every other condition on an
// encrypted field. It reports whether anything changed.
func (x *Encryption) filter(p *encPlan, coll string, filter any, depth int) (bson.D, bool, error) {
	if depth > maxEncDepth {
		return nil, false, fmt.Errorf("encryption: filter nested deeper than %d levels: %w", maxEncDepth, mql.ErrBadDocument)
	}
	d, err := mql.ToD(filter)
	if err != nil {
		return nil, false, err
	}
	if depth == 0 {
		if err := p.refuseForbidden(d); err != nil {
			return nil, false, err
		}
	}
	out := make(bson.D, 0, len(d))
	var extra bson.A
	changed := false
	for _, el := range d {
		switch el.Key {
		case "$and", "$or", "$nor":
			clauses, err := mql.Array(el.Value)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", el.Key, err)
			}
			nc := make(bson.A, len(clauses))
			for i, c := range clauses {
				sub, ch, err := x.filter(p, coll, c, depth+1)
				if err != nil {
					return nil, false, err
				}
				nc[i], changed = c, changed || ch
				if ch {
					nc[i] = sub
				}
			}
			out = append(out, bson.E{Key: el.Key, Value: nc})
			continue
		}
		if err := p.checkFilterOperator(el); err != nil {
			return nil, false, err
		}
		f, exact := p.lookup(el.Key)
		switch {
		case f == nil:
			out = append(out, el)
			continue
		case !exact:
			return nil, false, refuseEncrypted(f.BSON, "a condition on the sub-field "+el.Key)
		}
		conds, clause, err := x.condition(f, coll, el.Value)
		if err != nil {
			return nil, false, err
		}
		out, changed = append(out, conds...), true
		if clause != nil {
			extra = append(extra, clause)
		}
	}
	if len(extra) > 0 {
		out = bson.D{{Key: "$and", Value: append(bson.A{out}, extra...)}}
	}
	return out, changed, nil
}

// checkFilterOperator refuses a top-level filter operator that reads an
// encrypted field.
func (p *encPlan) checkFilterOperator(el bson.E) error {
	switch el.Key {
	case "$expr", "$jsonSchema":
		if f := p.refersTo(el.Value, 0); f != nil {
			return refuseEncrypted(f.BSON, el.Key)
		}
	case "$where":
		if f := p.namedIn(fmt.Sprint(el.Value)); f != nil {
			return refuseEncrypted(f.BSON, el.Key)
		}
	}
	return nil
}

// condition rewrites the condition cond on f. It returns the conditions
// to put in its place and, for a test for null (which MongoDB also
// matches on a missing field), a clause to AND to the filter instead.
func (x *Encryption) condition(f *model.EncryptedField, coll string, cond any) (bson.D, bson.D, error) {
	ops, isOps, err := queryOperators(cond)
	if err != nil {
		return nil, nil, err
	}
	if !isOps {
		ops = bson.D{{Key: "$eq", Value: cond}}
	}
	var keep, idx bson.D
	nullOK := true
	for _, op := range ops {
		switch op.Key {
		case "$exists":
			keep = append(keep, op)
			continue
		case "$eq", "$in":
			if !f.Eq {
				return nil, nil, refuseEncrypted(f.BSON, `equality without encrypt:"eq"`)
			}
		default:
			return nil, nil, refuseEncrypted(f.BSON, op.Key)
		}
		var vals []any
		if op.Key == "$in" {
			a, err := mql.Array(op.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("$in on %q: %w", f.BSON, err)
			}
			vals = a
		} else {
			vals = []any{op.Value}
		}
		hashes := make(bson.A, len(vals))
		null := false
		for i, v := range vals {
			if isRegexValue(v) {
				return nil, nil, refuseEncrypted(f.BSON, "a regular expression")
			}
			rv, err := encodeValue(v)
			if err != nil {
				return nil, nil, fmt.Errorf("encryption: the value compared with %q: %w", f.BSON, err)
			}
			null = null || rv.Type == bson.TypeNull
			h, err := x.blindIndexOf(f.BSON, coll, rv)
			if err != nil {
				return nil, nil, err
			}
			hashes[i] = blindEq{hash: h, plain: rv}
		}
		nullOK = nullOK && null
		if op.Key == "$eq" {
			idx = append(idx, bson.E{Key: "$eq", Value: hashes[0]})
		} else {
			idx = append(idx, bson.E{Key: "$in", Value: hashes})
		}
	}
	var conds bson.D
	if len(keep) > 0 {
		conds = append(conds, bson.E{Key: f.BSON, Value: keep})
	}
	if len(idx) == 0 {
		return conds, nil, nil
	}
	if nullOK {
		// {f: null} matches a missing f too; documents store null as a
		// ciphertext with the blind index of null.
		return conds, bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: f.BlindIndex(), Value: idx}},
			bson.D{{Key: f.BSON, Value: bson.D{{Key: "$exists", Value: false}}}},
		}}}, nil
	}
	if len(idx) == 1 && idx[0].Key == "$eq" {
		// A plain equality, so that an upsert copies it (see update).
		return append(conds, bson.E{Key: f.BlindIndex(), Value: idx[0].Value}), nil, nil
	}
	return append(conds, bson.E{Key: f.BlindIndex(), Value: idx}), nil, nil
}

// queryOperators returns cond's operators when cond is a document of query
// operators ({$gt: 1}), as opposed to a value compared whole. Documents of
// every shape count: bson.D, maps of any value type, structs, bson.Raw,
// bson.RawValue, []bson.E. A document that mixes operators and fields, or
// that cannot be read, is an error, so that no condition is mistaken for a
// value and silently hashed.
func queryOperators(cond any) (bson.D, bool, error) {
	var d bson.D
	var err error
	switch c := cond.(type) {
	case nil, string, bool, int, int32, int64, float64, primitive.ObjectID, primitive.DateTime, primitive.Binary,
		primitive.Decimal128, primitive.Regex, *primitive.Regex, []byte:
		return nil, false, nil
	case bson.D:
		d = c
	case []bson.E:
		d = bson.D(c)
	case bson.Raw:
		d, err = mql.ToD(c)
	case bson.RawValue:
		if c.Type != bson.TypeEmbeddedDocument {
			return nil, false, nil
		}
		d, err = mql.ToD(c.Document())
	default:
		rv := reflect.ValueOf(cond)
		for rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv = rv.Elem()
		}
		if k := rv.Kind(); k != reflect.Map && k != reflect.Struct {
			return nil, false, nil
		}
		d, err = mql.ToD(cond)
	}
	if err != nil {
		return nil, false, fmt.Errorf("encryption: a condition of type %T on an encrypted field: %w: %w", cond, ErrEncryptedField, err)
	}
	ops := 0
	for _, e := range d {
		if strings.HasPrefix(e.Key, "$") {
			ops++
		}
	}
	switch {
	case ops == 0:
		return nil, false, nil
	case ops < len(d):
		return nil, false, fmt.Errorf("encryption: a condition of type %T mixes operators and fields: %w", cond, ErrEncryptedField)
	}
	return d, true, nil
}

func isRegexValue(v any) bool {
	switch r := v.(type) {
	case primitive.Regex, *primitive.Regex:
		return true
	case bson.RawValue:
		return r.Type == bson.TypeRegex
	}
	return false
}

// blindEq is a blind index in a rewritten filter. The driver sends the
// hash only; the value it was computed from stays in memory, so that an
// upsert, which copies the filter's equalities into the document it
// inserts, can store the encrypted value too (see update). It prints
// redacted.
type blindEq struct {
	hash  []byte
	plain bson.RawValue
}

// MarshalBSONValue sends the hash, as binary subtype 0.
func (b blindEq) MarshalBSONValue() (bsontype.Type, []byte, error) {
	return bson.TypeBinary, bsoncore.AppendBinary(nil, bson.TypeBinaryGeneric, b.hash), nil
}

// String shows the hash, never the value.
func (b blindEq) String() string { return fmt.Sprintf("BlindIndex(%x)", b.hash) }

// Format prints String for every verb.
func (b blindEq) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, b.String()) }

// MarshalJSON encodes String.
func (b blindEq) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%q", b.String()), nil
}

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
			var v any
			var ch bool
			switch s.Key {
			case "$match":
				if final {
					err = p.checkFilter(s.Value, 0)
				} else {
					v, ch, err = x.filter(p, coll, s.Value, 0)
				}
			case "$sort":
				err = p.checkSort(s.Value)
			case "$geoNear":
				if !final {
					v, ch, err = x.geoNear(p, coll, s.Value)
				}
				if err == nil {
					checked := s
					if ch {
						checked.Value = v
					}
					err = p.checkStage(checked)
				}
			case "$facet":
				v, ch, err = x.facet(p, coll, s.Value, depth, final)
			case "$out", "$merge":
				err = fmt.Errorf("encryption: %s on a model with encrypted fields would store what the pipeline computes, plaintext included, unencrypted: %w", s.Key, ErrEncryptedField)
			default:
				err = p.checkStage(s)
			}
			if err != nil {
				return nil, false, fmt.Errorf("pipeline stage %d: %w", i, err)
			}
			if ch {
				if !changed { // Stages shares the caller's stages
					for k := range stages {
						stages[k] = slices.Clone(stages[k])
					}
				}
				stages[i][j].Value, changed = v, true
			}
		}
	}
	return stages, changed, nil
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
func (p *encPlan) refersTo(v any, depth int) *model.EncryptedField {
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
func (p *encPlan) namedIn(js string) *model.EncryptedField {
	for _, f := range p.fields {
		if strings.Contains(js, f.BSON) {
			return f
		}
	}
	return nil
}

// any returns one of the encrypted fields.
func (p *encPlan) any() *model.EncryptedField {
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
	if k := guard.KeyIn(raw, forbiddenOperators, 0); k != "" {
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

// refuseCollation refuses a collation other than "simple" on a query that
// compares an encrypted field: under it MongoDB would match values (such
// as "A@X" and "a@x") whose blind indexes differ.
func (p *encPlan) refuseCollation(e *events.Event) error {
	if e.Collation == nil || e.Collation.Locale == "simple" {
		return nil
	}
	return fmt.Errorf("encryption: collation %q on a query that compares an encrypted field: blind indexes compare bytes: %w", e.Collation.Locale, ErrEncryptedField)
}
