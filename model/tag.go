package model

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// ErrInvalidTag matches, through errors.Is, every *TagError.
var ErrInvalidTag = errors.New("model: invalid struct tag")

// TagError reports a struct tag that cannot work. It names the type, the
// field, the tag and the reason.
type TagError struct {
	Type   reflect.Type // the model type; nil from ParseAuto
	Field  string       // the Go field name
	Tag    string       // the offending tag
	Reason string
}

// Error formats the error as "model: type T field F (tag): reason".
func (e *TagError) Error() string {
	if e.Type == nil {
		return fmt.Sprintf("model: field %s `%s`: %s", e.Field, e.Tag, e.Reason)
	}
	return fmt.Sprintf("model: type %v field %s `%s`: %s", e.Type, e.Field, e.Tag, e.Reason)
}

// Is reports whether target is ErrInvalidTag.
func (e *TagError) Is(target error) bool { return target == ErrInvalidTag }

func (s *Schema) tagErr(field, tag, reason string) error {
	return &TagError{Type: s.Type, Field: field, Tag: tag, Reason: reason}
}

// Kind is what an `auto` tag asks for.
type Kind uint8

// The kinds of auto field.
const (
	// Inc: the next number of a sequence (auto:"inc"), or an order number
	// built from one (auto:"inc,format=...").
	Inc Kind = iota + 1
	// UUID: a random (v4) or time-ordered (v7) UUID (auto:"uuid").
	UUID
	// Version: the optimistic-locking version (auto:"version").
	Version
)

// String returns the kind's tag word.
func (k Kind) String() string {
	switch k {
	case Inc:
		return "inc"
	case UUID:
		return "uuid"
	case Version:
		return "version"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// AutoField is a field with an `auto` tag, parsed and validated.
//
// The grammar, options separated by commas:
//
//	auto:"inc"                              int, int32, int64, uint32, uint64
//	auto:"inc,seq=NAME,start=N,batch=N"     sequence name, first value, block size
//	auto:"inc,format=ORD-{date:060102}-{seq:5}" string: text, optional date, text, number, text (see Format)
//	auto:"inc,scope=projectId+docType"      one sequence per value of these fields (BSON names)
//	auto:"uuid"                             string, uuid.UUID, [16]byte; v4
//	auto:"uuid,v7,compact"                  time-ordered; 32 hex digits (string only)
//	auto:"version"                          integer optimistic-locking version
type AutoField struct {
	Field
	Kind Kind
	Tag  string // the tag's text

	// Seq is the sequence name (Inc); the default is "<collection>.<bson>".
	// With a dated Format the period is appended as "/<date>".
	Seq string
	// Start is the first value of the sequence (Inc; default 1).
	Start int64
	// Batch is the block size (Inc); 0 leaves it to the allocator.
	Batch int64
	// Max is the largest value the field can hold (Inc, Version).
	Max uint64
	// Format is the order-number template of a string Inc field.
	Format *Format
	// Scope are the fields whose values choose the sequence (Inc,
	// scope=a+b, by BSON name), in the tag's order: each combination of
	// their values has its own, and numbers start at Start in each. A
	// scope field is a string, an integer, a primitive.ObjectID or a
	// uuid.UUID of the model, and not a key.
	Scope      []Field
	scopeNames []string // Scope as the tag names it, resolved by Schema.check

	// V7 asks for RFC 9562 version 7 UUIDs (UUID).
	V7 bool
	// Compact asks for 32 hex digits without dashes (UUID on a string).
	Compact bool
}

var (
	uuidType  = reflect.TypeFor[uuid.UUID]()
	bytes16   = reflect.TypeFor[[16]byte]()
	maxFields = map[reflect.Kind]uint64{
		reflect.Int: math.MaxInt, reflect.Int32: math.MaxInt32, reflect.Int64: math.MaxInt64,
		reflect.Uint32: math.MaxUint32, reflect.Uint64: math.MaxUint64,
	}
)

// ParseAuto parses an `auto` tag for a field of type t, without a model
// around it: the default sequence name is then empty. Of calls it for each
// tagged field; it is exported for tools and for fuzzing.
func ParseAuto(tag string, t reflect.Type) (AutoField, error) {
	s := &Schema{}
	return parseAuto(s, Field{Name: "Field", Type: t}, tag)
}

func parseAuto(s *Schema, f Field, tag string) (AutoField, error) {
	a := AutoField{Field: f, Tag: tag}
	fail := func(format string, args ...any) (AutoField, error) {
		return AutoField{}, s.tagErr(f.Name, `auto:"`+tag+`"`, fmt.Sprintf(format, args...))
	}
	if f.Type == nil {
		return fail("no field type")
	}
	parts := strings.Split(tag, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if parts[0] == "" {
		return fail(`empty auto tag; want "inc", "uuid" or "version"`)
	}
	var kinds []string
	for _, p := range parts {
		if p == "inc" || p == "uuid" || p == "version" {
			kinds = append(kinds, p)
		}
	}
	if len(kinds) > 1 {
		return fail("%s and %s on the same field", kinds[0], kinds[1])
	}
	switch parts[0] {
	case "inc":
		a.Kind = Inc
	case "uuid":
		a.Kind = UUID
	case "version":
		a.Kind = Version
	default:
		return fail("%s", unknownKind(parts, kinds))
	}
	seen := map[string]bool{}
	for _, opt := range parts[1:] {
		key, val, hasVal := strings.Cut(opt, "=")
		if key == "" {
			return fail("empty option")
		}
		if seen[key] {
			return fail("option %q given twice", key)
		}
		seen[key] = true
		if err := a.setOption(key, val, hasVal); err != "" {
			return fail("%s", err)
		}
	}
	if a.Kind == UUID && seen["v4"] && seen["v7"] {
		return fail("v4 and v7 conflict")
	}
	if reason := a.checkType(); reason != "" {
		return fail("%s", reason)
	}
	if a.Kind == Inc {
		if a.Start == 0 {
			a.Start = 1
		}
		if a.Format == nil && uint64(a.Start) > a.Max {
			return fail("start=%d does not fit in %v", a.Start, f.Type)
		}
		if a.Seq == "" && s.Collection != "" {
			a.Seq = s.Collection + "." + f.BSON
		}
		if strings.ContainsAny(a.Seq, "#\x00") {
			return fail("sequence name %q may not contain '#' or NUL", a.Seq)
		}
	}
	return a, nil
}

// unknownKind explains a tag whose first part is no kind, and says what to
// write when the part is an option of a kind: the kind comes first, as in
// auto:"inc,format=INV-{seq:4}".
func unknownKind(parts, kinds []string) string {
	key, _, _ := strings.Cut(parts[0], "=")
	kind := ""
	switch {
	case len(kinds) == 1:
		kind = kinds[0]
	default:
		for _, k := range []Kind{Inc, UUID} {
			if _, ok := optionKinds[k][key]; ok {
				kind = k.String()
			}
		}
	}
	if kind == "" {
		return fmt.Sprintf(`unknown kind %q; want "inc", "uuid" or "version" first, then its options`, parts[0])
	}
	rest := make([]string, 0, len(parts))
	for _, p := range parts {
		if p != kind {
			rest = append(rest, p)
		}
	}
	return fmt.Sprintf(`%q is not a kind, and the kind comes first: write auto:"%s"`, parts[0], strings.Join(append([]string{kind}, rest...), ","))
}

// setOption applies one key[=value] option; it returns a reason on error.
func (a *AutoField) setOption(key, val string, hasVal bool) string {
	valued, known := optionKinds[a.Kind][key]
	if !known {
		return fmt.Sprintf("unknown option %q for auto:%q", key, a.Kind.String())
	}
	if valued != hasVal {
		if hasVal {
			return fmt.Sprintf("option %q takes no value", key)
		}
		return fmt.Sprintf("option %q needs a value (%s=...)", key, key)
	}
	switch {
	case a.Kind == Inc && key == "seq":
		if val == "" {
			return "seq= needs a name"
		}
		a.Seq = val
	case a.Kind == Inc && (key == "start" || key == "batch"):
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 1 {
			return fmt.Sprintf("%s=%s: want a whole number ≥ 1 (0 means unset, so it is never a key)", key, val)
		}
		if key == "batch" && n > MaxBatch {
			return fmt.Sprintf("batch=%d: at most %d", n, MaxBatch)
		}
		if key == "start" {
			a.Start = n
		} else {
			a.Batch = n
		}
	case a.Kind == Inc && key == "scope":
		return a.setScope(val)
	case a.Kind == Inc && key == "format":
		f, err := parseFormat(val)
		if err != nil {
			return err.Error()
		}
		a.Format = f
	case a.Kind == UUID && (key == "v4" || key == "v7"):
		a.V7 = key == "v7"
	case a.Kind == UUID && key == "compact":
		a.Compact = true
	default:
		return fmt.Sprintf("unknown option %q for auto:%q", key, a.Kind.String())
	}
	return ""
}

// setScope reads scope=a or scope=a+b; it returns a reason on error.
func (a *AutoField) setScope(val string) string {
	for _, name := range strings.Split(val, "+") {
		switch {
		case name == "":
			return fmt.Sprintf("scope=%s: an empty field name; write scope=FIELD or scope=FIELD+FIELD (BSON names)", val)
		case slices.Contains(a.scopeNames, name):
			return fmt.Sprintf("scope=%s: %s named twice", val, name)
		default:
			a.scopeNames = append(a.scopeNames, name)
		}
	}
	return ""
}

// optionKinds lists each kind's options, and whether each takes a value.
var optionKinds = map[Kind]map[string]bool{
	Inc:     {"seq": true, "start": true, "batch": true, "format": true, "scope": true},
	UUID:    {"v4": false, "v7": false, "compact": false},
	Version: {},
}

// MaxBatch is the largest block size a tag may ask for.
const MaxBatch = 1 << 20

// checkType checks the field's Go type against the kind and options.
func (a *AutoField) checkType() string {
	t := a.Type
	switch a.Kind {
	case Inc:
		if a.Format != nil {
			if t.Kind() != reflect.String {
				return fmt.Sprintf("format= needs a string field, not %v", t)
			}
			a.Max = math.MaxInt64
			return ""
		}
		if t.Kind() == reflect.String {
			return "inc on a string field needs format=, e.g. format=ORD{seq:5}"
		}
		max, ok := maxFields[t.Kind()]
		if !ok {
			return fmt.Sprintf("inc needs an int, int32, int64, uint32 or uint64 field, not %v", t)
		}
		a.Max = min(max, math.MaxInt64)
	case Version:
		max, ok := maxFields[t.Kind()]
		if !ok {
			return fmt.Sprintf("version needs an int, int32, int64, uint32 or uint64 field, not %v", t)
		}
		a.Max = min(max, math.MaxInt64)
	case UUID:
		switch {
		case t.Kind() == reflect.String:
		case t == uuidType || t == bytes16:
			if a.Compact {
				return fmt.Sprintf("compact needs a string field, not %v", t)
			}
		default:
			return fmt.Sprintf("uuid needs a string, uuid.UUID or [16]byte field, not %v", t)
		}
	}
	return ""
}
