package outbox

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/bson"
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

func fault(key []byte, why string, args ...any) *dataFault {
	return &dataFault{path: []string{string(key)}, why: fmt.Sprintf(why, args...)}
}

// checkJSONData refuses a document that relaxed Extended JSON would not
// carry as it is, or that a JSON reader would read as something else; the
// doc comment of Message.CloudEvent lists the cases.
func checkJSONData(doc bsoncore.Document) error {
	if f := checkDocument(doc, false); f != nil {
		return f
	}
	return nil
}

// checkDocument checks the elements of doc, a document or (array) an
// array. It reads the bytes as they are, so that data JSON can carry
// costs no allocation.
func checkDocument(doc []byte, array bool) *dataFault {
	if n, _, ok := bsoncore.ReadLength(doc); !ok || int(n) != len(doc) || n < 5 || doc[n-1] != 0 {
		return notBSON()
	}
	var small [16][]byte
	keys := small[:0]
	var seen map[string]bool // once the document has more keys than small holds
	rest := doc[4 : len(doc)-1]
	for i := 0; len(rest) > 0; i++ {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return notBSON()
		}
		rest = r
		key := el.KeyBytes()
		if f := checkKey(key, i, array); f != nil {
			return f
		}
		if !array && seen == nil && len(keys) == cap(small) {
			seen = make(map[string]bool, 2*len(keys))
			for _, k := range keys {
				seen[string(k)] = true
			}
		}
		switch {
		case array:
		case seen != nil && seen[string(key)], seen == nil && slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }):
			return fault(key, "the key appears twice in the document, and a JSON reader keeps one of them")
		case seen != nil:
			seen[string(key)] = true
		default:
			keys = append(keys, key)
		}
		if f := checkValue(el.Value()); f != nil {
			f.path = append(f.path, string(key))
			return f
		}
	}
	return nil
}

func checkKey(key []byte, i int, array bool) *dataFault {
	switch {
	case !utf8.Valid(key):
		return fault(key, "the key is not valid UTF-8, which JSON would carry as U+FFFD")
	case array && !bytes.Equal(key, strconv.AppendInt(make([]byte, 0, 20), int64(i), 10)):
		return fault(key, "array element %d has the key %q, which a JSON array cannot carry", i, key)
	case !array && len(key) > 0 && key[0] == '$' && extJSONKeywords[string(key)]:
		return fault(key, "the key is an Extended JSON keyword, so a reader would take the document for a value of another type")
	}
	return nil
}

// checkValue checks one value; the caller adds its key to the fault.
func checkValue(v bsoncore.Value) *dataFault {
	var strs [2][]byte // the value's strings
	n := 0
	switch v.Type {
	case bson.TypeString, bson.TypeSymbol, bson.TypeJavaScript:
		s, rest, ok := readString(v.Data)
		if !ok || len(rest) != 0 {
			return notBSON()
		}
		strs[0], n = s, 1
	case bson.TypeRegex:
		pattern, options, ok := bytes.Cut(v.Data, []byte{0})
		if !ok || len(options) == 0 || options[len(options)-1] != 0 || bytes.IndexByte(options, 0) != len(options)-1 {
			return notBSON()
		}
		strs[0], strs[1], n = pattern, options[:len(options)-1], 2
	case bson.TypeCodeWithScope:
		if len(v.Data) < 4 {
			return notBSON()
		}
		code, scope, ok := readString(v.Data[4:])
		if !ok {
			return notBSON()
		}
		if f := checkDocument(scope, false); f != nil {
			return f
		}
		strs[0], n = code, 1
	case bson.TypeDBPointer:
		ns, rest, ok := readString(v.Data)
		if !ok || len(rest) != 12 {
			return notBSON()
		}
		if bytes.ContainsFunc(ns, func(r rune) bool { return r == '"' || r == '\\' || r < ' ' }) {
			return &dataFault{why: fmt.Sprintf("the DBPointer namespace %q holds '\"', '\\' or a control character, which the Extended JSON writer does not escape", ns)}
		}
		strs[0], n = ns, 1
	case bson.TypeBinary:
		// The old binary subtype 2 repeats the length inside; a reader
		// keeps the bytes that inner length counts.
		if len(v.Data) >= 9 && v.Data[4] == 2 {
			outer, _, _ := bsoncore.ReadLength(v.Data)
			if inner, _, _ := bsoncore.ReadLength(v.Data[5:]); inner != outer-4 {
				return &dataFault{why: fmt.Sprintf("the binary of subtype 2 holds %d bytes, and its inner length says %d", outer-4, inner)}
			}
		}
	case bson.TypeEmbeddedDocument, bson.TypeArray:
		return checkDocument(v.Data, v.Type == bson.TypeArray)
	}
	for _, s := range strs[:n] {
		if !utf8.Valid(s) {
			return &dataFault{why: fmt.Sprintf("the %s %q is not valid UTF-8, which JSON would carry as U+FFFD", v.Type, s)}
		}
	}
	return nil
}

func notBSON() *dataFault { return &dataFault{why: "not valid BSON"} }

// readString reads a BSON string (its length, its bytes, a NUL) from b.
func readString(b []byte) (s, rest []byte, ok bool) {
	n, rest, ok := bsoncore.ReadLength(b)
	if !ok || n < 1 || int(n) > len(rest) || rest[n-1] != 0 {
		return nil, nil, false
	}
	return rest[:n-1], rest[n:], true
}
