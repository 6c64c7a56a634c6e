package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// ErrInvalidIndex is returned, wrapped, for indexes that cannot work
// together, or an index of a model's Indexes method that cannot work: two
// declarations of one name or of the same keys, or keys that another
// part of mgmevents indexes itself. The error names what declared each.
// A bad `index` tag on its own is a *TagError (ErrInvalidTag).
var ErrInvalidIndex = errors.New("model: invalid index declaration")

// Index is an index a model declares, by `index` tags on its fields or by
// its Indexes method (Indexer). Repositories create the missing ones and
// compare the others with what the collection has (repo.WithIndexes).
//
// The tag grammar, options separated by commas:
//
//	index:""                    a single-field ascending index
//	index:"desc"                descending
//	index:"unique"              unique
//	index:"ttl=24h"             TTL: documents expire this long after the field's time
//	                            (time.Time, *time.Time or primitive.DateTime; whole seconds)
//	index:"name=byCustomer"     the index's name; fields sharing a name form one
//	index:"name=byCustomer,order=2"  compound index, in order= (every member says
//	                            order=, or none does and declaration order holds)
//
// unique given on one member of a compound index makes the whole index
// unique. Without name= the name is the driver's default, keys and
// directions joined by "_" ("total_-1").
type Index struct {
	// Name is the index's name.
	Name string
	// Keys are the indexed keys in order, each with 1, -1 (int32) or an
	// index type such as "text" or "2dsphere".
	Keys bson.D
	// Unique refuses a second document with the same keys.
	Unique bool
	// Sparse leaves out documents that lack the keys (Indexes only).
	Sparse bool
	// ExpireAfterSeconds makes a TTL index, or is nil.
	ExpireAfterSeconds *int32
	// PartialFilter is the partialFilterExpression (Indexes only), or nil.
	PartialFilter bson.Raw
	// Source says what declared the index, for errors: the fields and
	// their tags, or "Indexes()[i]".
	Source string

	extra *options.IndexOptions // the rest of an Indexes() model's options
}

// Indexer is implemented by models that declare indexes a tag cannot say,
// such as partial ones (a partialFilterExpression). Of calls Indexes once,
// on a zero model; its indexes are merged with the tags' and checked the
// same way.
type Indexer interface {
	Indexes() []mongo.IndexModel
}

// Model returns the index as the driver creates it. Options an Indexes
// method set beyond those Index holds (a collation, say) are kept: the
// struct is a shallow copy.
func (ix *Index) Model() mongo.IndexModel {
	o := options.Index()
	if ix.extra != nil {
		c := *ix.extra
		o = &c
	}
	o.SetName(ix.Name)
	o.Unique, o.Sparse, o.ExpireAfterSeconds, o.PartialFilterExpression = nil, nil, nil, nil
	if ix.Unique {
		o.SetUnique(true)
	}
	if ix.Sparse {
		o.SetSparse(true)
	}
	if ix.ExpireAfterSeconds != nil {
		o.SetExpireAfterSeconds(*ix.ExpireAfterSeconds)
	}
	if ix.PartialFilter != nil {
		o.SetPartialFilterExpression(ix.PartialFilter)
	}
	return mongo.IndexModel{Keys: slices.Clone(ix.Keys), Options: o}
}

// String describes the index: its name, keys and options, and what
// declared it.
func (ix *Index) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", ix.Name, KeysString(ix.Keys))
	if ix.Unique {
		b.WriteString(" unique")
	}
	if ix.Sparse {
		b.WriteString(" sparse")
	}
	if ix.ExpireAfterSeconds != nil {
		fmt.Fprintf(&b, " expireAfterSeconds=%d", *ix.ExpireAfterSeconds)
	}
	if ix.PartialFilter != nil {
		fmt.Fprintf(&b, " partialFilterExpression=%s", ix.PartialFilter)
	}
	if ix.Source != "" {
		fmt.Fprintf(&b, " (declared by %s)", ix.Source)
	}
	return b.String()
}

// KeysString writes keys as {a: 1, b: -1}.
func KeysString(keys bson.D) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %v", k.Key, k.Value)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// IndexName returns the driver's default name for keys: each key and its
// value, joined by "_".
func IndexName(keys bson.D) string {
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, k.Key, fmt.Sprint(k.Value))
	}
	return strings.Join(parts, "_")
}

// indexTag is one field's parsed `index` tag.
type indexTag struct {
	field    Field
	tag      string
	name     string
	order    int
	hasOrder bool
	desc     bool
	unique   bool
	ttl      *int32
}

func (t *indexTag) label() string { return `index:"` + t.tag + `"` }

func parseIndexTag(s *Schema, f Field, tag string) (indexTag, error) {
	t := indexTag{field: f, tag: tag}
	fail := func(format string, args ...any) (indexTag, error) {
		return indexTag{}, s.tagErr(f.Name, t.label(), fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(tag) == "" {
		return t, nil
	}
	seen := map[string]bool{}
	for _, opt := range strings.Split(tag, ",") {
		key, val, hasVal := strings.Cut(strings.TrimSpace(opt), "=")
		if key == "" {
			return fail("empty option")
		}
		if seen[key] || (key == "asc" && seen["desc"]) || (key == "desc" && seen["asc"]) {
			return fail("option %q given twice, or asc with desc", key)
		}
		seen[key] = true
		valued := key == "name" || key == "order" || key == "ttl"
		known := valued || key == "asc" || key == "desc" || key == "unique"
		switch {
		case !known:
			return fail(`unknown option %q; want asc, desc, unique, name=NAME, order=N or ttl=DURATION (partial indexes: an Indexes method)`, key)
		case valued != hasVal && valued:
			return fail("option %q needs a value (%s=...)", key, key)
		case valued != hasVal:
			return fail("option %q takes no value", key)
		}
		if reason := t.set(key, val); reason != "" {
			return fail("%s", reason)
		}
	}
	if t.ttl != nil && f.Type != timeType && f.Type != timePtrType && f.Type != dateTimeType {
		return fail("ttl= needs a time.Time, *time.Time or primitive.DateTime field, not %v", f.Type)
	}
	return t, nil
}

// set applies one option; it returns a reason on error.
func (t *indexTag) set(key, val string) string {
	switch key {
	case "desc":
		t.desc = true
	case "unique":
		t.unique = true
	case "name":
		if val == "" || strings.ContainsRune(val, 0) {
			return "name= needs a name"
		}
		t.name = val
	case "order":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			return fmt.Sprintf("order=%s: want a whole number ≥ 1", val)
		}
		t.order, t.hasOrder = n, true
	case "ttl":
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 || d%time.Second != 0 || d/time.Second > math.MaxInt32 {
			return fmt.Sprintf("ttl=%s: want a duration of whole seconds, 0s up to %ds, such as 24h", val, math.MaxInt32)
		}
		secs := int32(d / time.Second)
		t.ttl = &secs
	}
	return ""
}

// buildIndexes turns the stored fields' index tags into indexes, adds
// those of the model's Indexes method, and checks them all.
func (s *Schema) buildIndexes() error {
	var tags []indexTag
	for _, f := range s.Fields {
		tag, ok := s.Struct.FieldByIndex(f.Index).Tag.Lookup("index")
		if !ok {
			continue
		}
		t, err := parseIndexTag(s, f, tag)
		if err != nil {
			return err
		}
		tags = append(tags, t)
	}
	var order []string // index names in the order their first member appears
	groups := map[string][]indexTag{}
	for _, t := range tags {
		key := t.name
		if key == "" {
			key = "\x00" + t.field.BSON // unnamed: an index of its own
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], t)
	}
	for _, key := range order {
		ix, err := s.indexOf(groups[key])
		if err != nil {
			return err
		}
		s.Indexes = append(s.Indexes, ix)
	}
	if err := s.methodIndexes(); err != nil {
		return err
	}
	return s.checkIndexes()
}

// indexOf builds one index from the tags of its members.
func (s *Schema) indexOf(members []indexTag) (Index, error) {
	first := members[0]
	if len(members) > 1 {
		withOrder := 0
		for _, m := range members {
			if m.hasOrder {
				withOrder++
			}
		}
		if withOrder != 0 && withOrder != len(members) {
			return Index{}, s.tagErr(first.field.Name, first.label(), fmt.Sprintf("index %q: give order= on every field of it, or on none", first.name))
		}
		slices.SortStableFunc(members, func(a, b indexTag) int { return a.order - b.order })
	}
	ix := Index{}
	var sources []string
	for i, m := range members {
		if i > 0 && m.hasOrder && m.order == members[i-1].order {
			return Index{}, s.tagErr(m.field.Name, m.label(), fmt.Sprintf("index %q: order=%d is also given on field %s", m.name, m.order, members[i-1].field.Name))
		}
		if m.ttl != nil && len(members) > 1 {
			return Index{}, s.tagErr(m.field.Name, m.label(), fmt.Sprintf("index %q: a TTL index has a single field", m.name))
		}
		dir := int32(1)
		if m.desc {
			dir = -1
		}
		ix.Keys = append(ix.Keys, bson.E{Key: m.field.BSON, Value: dir})
		ix.Unique = ix.Unique || m.unique
		ix.ExpireAfterSeconds = m.ttl
		sources = append(sources, "field "+m.field.Name+" `"+m.label()+"`")
	}
	ix.Name = first.name
	if ix.Name == "" {
		ix.Name = IndexName(ix.Keys)
	}
	ix.Source = strings.Join(sources, ", ")
	return ix, nil
}
