package encryption

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

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
func (x *Encryption) condition(f *encField, coll string, cond any) (bson.D, bson.D, error) {
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
				return nil, nil, refuseEncrypted(f.BSON, `equality without policy:"encrypt,eq"`)
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
