package repo

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
)

// A keyset position (Page.Next, PageRequest.After) is the URL-safe base64
// of a BSON document {s: the sort, v: [the last model's value of each sort
// field]}. It comes back from the caller, so it is checked as untrusted:
// it must be BSON, made for the request's sort, with one value per field;
// its values are only ever compared with ($eq, $gt, $lt), never read as
// operators, and policies confine the filter they go into as any other.

// position returns the keyset position after doc, the raw document as
// read, for sort. projected says the find had a projection, which may
// have dropped a sort field: a missing one is then an error, not a null.
func position(sort bson.D, doc bson.Raw, projected bool) (string, error) {
	vals := make(bson.A, len(sort))
	for i, e := range sort {
		v, err := doc.LookupErr(strings.Split(e.Key, ".")...)
		switch {
		case err != nil && projected:
			return "", fmt.Errorf("document _id %v has no sort field %q: the projection must keep every field of PageRequest.Sort: %w", doc.Lookup("_id"), e.Key, ErrInvalidArgument)
		case err != nil, v.Type == bson.TypeUndefined:
			v = bson.RawValue{Type: bson.TypeNull}
		case v.Type == bson.TypeArray:
			return "", fmt.Errorf("document _id %v holds an array in sort field %q, whose order keyset paging cannot follow: page by Offset, or sort by another field: %w", doc.Lookup("_id"), e.Key, ErrInvalidArgument)
		}
		vals[i] = v
	}
	b, err := bson.Marshal(bson.D{{Key: "s", Value: sort}, {Key: "v", Value: vals}})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

var errPosition = errors.New("PageRequest.After is not a position that FindPage made (Page.Next)")

// decodePosition reads token, checks that it was made for sort, and
// returns its values, one per field of sort.
func decodePosition(token string, sort bson.D) ([]bson.RawValue, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || bson.Raw(b).Validate() != nil {
		return nil, fmt.Errorf("%w: %w", errPosition, ErrInvalidArgument)
	}
	want, err := bson.Marshal(sort)
	if err != nil {
		return nil, err
	}
	s, err := bson.Raw(b).LookupErr("s")
	if err != nil || s.Type != bson.TypeEmbeddedDocument || !bytes.Equal(s.Value, want) {
		return nil, fmt.Errorf("%w for this PageRequest.Sort (with _id as its tiebreaker): %w", errPosition, ErrInvalidArgument)
	}
	v, err := bson.Raw(b).LookupErr("v")
	if err != nil || v.Type != bson.TypeArray {
		return nil, fmt.Errorf("%w: %w", errPosition, ErrInvalidArgument)
	}
	vals, err := bson.Raw(v.Value).Values()
	if err != nil || len(vals) != len(sort) {
		return nil, fmt.Errorf("%w: %w", errPosition, ErrInvalidArgument)
	}
	return vals, nil
}

// keysetOr returns the disjuncts of the condition "after vals in sort":
// for each field i, the fields before it equal to their values and field
// i past its value, in the server's sort order, where a null (or a
// missing field) comes before every other value.
func keysetOr(sort bson.D, vals []bson.RawValue) bson.A {
	var or bson.A
	for i, e := range sort {
		past, ok := pastValue(e.Key, e.Value.(int32), vals[i])
		if !ok {
			continue
		}
		conj := make(bson.D, 0, i+1)
		for j := range i {
			conj = append(conj, equalValue(sort[j].Key, vals[j]))
		}
		or = append(or, append(conj, past))
	}
	if len(or) == 0 { // nothing comes after: match nothing
		return bson.A{bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{}}}}}}
	}
	return or
}

func isNull(v bson.RawValue) bool { return v.Type == bson.TypeNull }

func equalValue(key string, v bson.RawValue) bson.E {
	if isNull(v) {
		return bson.E{Key: key, Value: nil} // null or missing, as the sort sees them
	}
	return bson.E{Key: key, Value: bson.D{{Key: "$eq", Value: v}}}
}

// pastValue is the condition that field key comes after v in direction
// dir; false when nothing does (a null, descending).
func pastValue(key string, dir int32, v bson.RawValue) (bson.E, bool) {
	switch {
	case dir > 0 && isNull(v):
		return bson.E{Key: key, Value: bson.D{{Key: "$ne", Value: nil}}}, true
	case dir > 0:
		return bson.E{Key: key, Value: bson.D{{Key: "$gt", Value: v}}}, true
	case isNull(v):
		return bson.E{}, false
	}
	return bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: key, Value: bson.D{{Key: "$lt", Value: v}}}},
		bson.D{{Key: key, Value: nil}},
	}}, true
}
