package outbox

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// extJSONKeywords are the keys by which an Extended JSON reader takes an
// object for a value of another BSON type: the driver's reader looks at
// the first key, others at any ("$regex" is the legacy form of a regular
// expression, "$uuid" a shorthand of binary subtype 4).
var extJSONKeywords = map[string]bool{
	"$oid": true, "$symbol": true, "$numberInt": true, "$numberLong": true, "$numberDouble": true,
	"$numberDecimal": true, "$binary": true, "$uuid": true, "$code": true, "$scope": true,
	"$timestamp": true, "$regularExpression": true, "$regex": true, "$dbPointer": true,
	"$date": true, "$minKey": true, "$maxKey": true, "$undefined": true,
}

// dataFault is where and why data cannot be rendered as JSON faithfully.
// path holds the keys from the fault up to the top-level field.
type dataFault struct {
	path []string
	why  string
}

func (f *dataFault) Error() string {
	keys := make([]string, len(f.path))
	for i, k := range f.path {
		keys[len(f.path)-1-i] = k
	}
	return fmt.Sprintf("data field %q: %s", strings.Join(keys, "."), f.why)
}

func fault(key, why string, args ...any) *dataFault {
	return &dataFault{path: []string{key}, why: fmt.Sprintf(why, args...)}
}

// checkJSONData refuses a document that relaxed Extended JSON would not
// carry as it is, or that a JSON reader would read as something else:
//
//   - a key or a string (also of a symbol, code, a regular expression) that
//     is not valid UTF-8: the writer replaces the bytes with U+FFFD;
//   - a key that appears twice in a document: a JSON reader keeps one;
//   - a key that is an Extended JSON keyword ("$oid", "$date", ...): a
//     reader takes the document for a value of that type;
//   - an array whose keys are not 0, 1, 2, ...: JSON arrays carry no keys;
//   - a DBPointer whose namespace holds '"', '\' or a control character:
//     the writer writes it unescaped;
//   - a binary of the old subtype 2 whose inner length disagrees with its
//     size: the writer keeps what the inner length counts.
//
// The width of an integer (int32 or int64 of the same value), a NaN's
// payload, a Decimal128's encoding beside its value and the order of a
// regular expression's options are not kept, as they are no part of the
// value.
func checkJSONData(doc bsoncore.Document) error {
	if f := checkDocument(doc, false); f != nil {
		return f
	}
	return nil
}

// checkDocument checks the elements of doc, a document or (array) an
// array.
func checkDocument(doc bsoncore.Document, array bool) *dataFault {
	if n, _, ok := bsoncore.ReadLength(doc); !ok || int(n) != len(doc) || n < 5 || doc[n-1] != 0 {
		return &dataFault{why: "not valid BSON"}
	}
	var small [16]string
	keys := small[:0]
	var seen map[string]bool
	rest := doc[4 : len(doc)-1]
	for i := 0; len(rest) > 0; i++ {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return &dataFault{why: "not valid BSON"}
		}
		rest = r
		key := el.Key()
		if f := checkKey(key, i, array); f != nil {
			return f
		}
		if !array {
			if seen == nil && len(keys) == cap(small) {
				seen = make(map[string]bool, 2*len(keys))
				for _, k := range keys {
					seen[k] = true
				}
			}
			if seen[key] || seen == nil && slices.Contains(keys, key) {
				return fault(key, "the key appears twice in the document, and a JSON reader keeps one of them")
			}
			if seen != nil {
				seen[key] = true
			} else {
				keys = append(keys, key)
			}
		}
		if f := checkValue(el.Value()); f != nil {
			f.path = append(f.path, key)
			return f
		}
	}
	return nil
}

func checkKey(key string, i int, array bool) *dataFault {
	switch {
	case !utf8.ValidString(key):
		return fault(key, "the key is not valid UTF-8, which JSON would carry as U+FFFD")
	case array && key != strconv.Itoa(i):
		return fault(key, "array element %d has the key %q, which a JSON array cannot carry", i, key)
	case !array && extJSONKeywords[key]:
		return fault(key, "the key is an Extended JSON keyword, so a reader would take the document for a value of another type")
	}
	return nil
}

// checkValue checks one value; the caller adds its key to the fault.
func checkValue(v bsoncore.Value) *dataFault {
	var strs [2]string // the value's strings
	n, ok := 0, true
	switch v.Type {
	case bsontype.String:
		strs[0], ok = v.StringValueOK()
		n = 1
	case bsontype.Symbol:
		strs[0], ok = v.SymbolOK()
		n = 1
	case bsontype.JavaScript:
		strs[0], ok = v.JavaScriptOK()
		n = 1
	case bsontype.Regex:
		strs[0], strs[1], ok = v.RegexOK()
		n = 2
	case bsontype.CodeWithScope:
		var scope bsoncore.Document
		if strs[0], scope, ok = v.CodeWithScopeOK(); ok {
			if f := checkDocument(scope, false); f != nil {
				return f
			}
		}
		n = 1
	case bsontype.DBPointer:
		if strs[0], _, ok = v.DBPointerOK(); ok && strings.ContainsFunc(strs[0], func(r rune) bool { return r == '"' || r == '\\' || r < ' ' }) {
			return &dataFault{why: fmt.Sprintf("the DBPointer namespace %q holds '\"', '\\' or a control character, which the Extended JSON writer does not escape", strs[0])}
		}
		n = 1
	case bsontype.Binary:
		// The old binary subtype 2 repeats the length inside; a reader
		// keeps the bytes that inner length counts.
		if len(v.Data) >= 9 && v.Data[4] == 2 {
			outer, _, _ := bsoncore.ReadLength(v.Data)
			if inner, _, _ := bsoncore.ReadLength(v.Data[5:]); inner != outer-4 {
				return &dataFault{why: fmt.Sprintf("the binary of subtype 2 holds %d bytes, and its inner length says %d", outer-4, inner)}
			}
		}
	case bsontype.EmbeddedDocument, bsontype.Array:
		return checkDocument(v.Data, v.Type == bsontype.Array)
	}
	if !ok {
		return &dataFault{why: "not valid BSON"}
	}
	for _, s := range strs[:n] {
		if !utf8.ValidString(s) {
			return &dataFault{why: fmt.Sprintf("the %s %q is not valid UTF-8, which JSON would carry as U+FFFD", v.Type, s)}
		}
	}
	return nil
}
