package encryption

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// A change stream's pipeline (Watch) sees change events, whose stored
// fields are under fullDocument, fullDocumentBeforeChange and
// updateDescription.updatedFields, and which a $replaceRoot can lift to the
// top. Blind indexes are not rewritten there, and nothing a stage computes
// on them is checked as an Aggregate's is: so, as Aggregate does, a
// pipeline is refused when, anywhere, as a key or a value, it names an
// encrypted field or a blind index (a key, a "$path", a join field), uses
// an operator that reads a field by a computed name or in JavaScript
// ($getField, $function, ...) or a search stage, or reads a whole document
// ($$ROOT, $$CURRENT, or one of changeDocuments as a "$path", such as
// $objectToArray of "$fullDocument"). The full documents delivered are
// decrypted as a read's (when every stage passes them through unchanged).

// changeDocuments are the fields of a change event that hold a stored
// document, or a part of one, whole: a "$path" to one of them reads every
// field in it.
var changeDocuments = []string{"fullDocument", "fullDocumentBeforeChange", "updateDescription", "updateDescription.updatedFields"}

// refuseInChangeStream refuses pipeline, a change stream's, when it names
// an encrypted field or a blind index, reads a whole document, or uses an
// operator or stage the encryption cannot follow.
func (p *encPlan) refuseInChangeStream(pipeline any) error {
	st, err := mql.Stages(pipeline)
	if err != nil {
		return fmt.Errorf("encryption: a change stream's pipeline: %w: %w", ErrEncryptedField, err)
	}
	raw, err := bsonio.Marshal(registry, bson.D{{Key: "$pipeline", Value: st}})
	if err != nil {
		return fmt.Errorf("encryption: a change stream's pipeline: %w: %w", ErrEncryptedField, err)
	}
	if what := p.readInChange(raw, 0); what != "" {
		return fmt.Errorf("encryption: a change stream's pipeline %s, which cannot be matched or computed on there: %w", what, ErrEncryptedField)
	}
	return nil
}

// readInChange returns what in doc reads an encrypted field, as a phrase
// for an error, or "".
func (p *encPlan) readInChange(doc bson.Raw, depth int) string {
	if depth > maxEncDepth {
		return fmt.Sprintf("nests deeper than %d levels", maxEncDepth)
	}
	elems, err := doc.Elements()
	if err != nil {
		return "is unreadable BSON"
	}
	for _, el := range elems {
		key := el.Key()
		if name := p.segmentIn(key); name != "" {
			return fmt.Sprintf("names the encrypted field %q", name)
		}
		if slices.Contains(forbiddenOperators, key) {
			return "uses " + key + " (it can read any field, such as encrypted ones)"
		}
		if slices.Contains(searchStages, key) {
			return "uses " + key + " (its conditions name fields the encryption cannot read)"
		}
		v := el.Value()
		switch v.Type {
		case bson.TypeString:
			if what := p.readByString(key, v.StringValue()); what != "" {
				return what
			}
		case bson.TypeJavaScript, bson.TypeCodeWithScope:
			code, ok := v.JavaScriptOK()
			if !ok {
				code, _ = v.CodeWithScope()
			}
			if f := p.namedIn(code); f != nil {
				return fmt.Sprintf("names the encrypted field %q in JavaScript", f.BSON)
			}
		case bson.TypeEmbeddedDocument:
			if what := p.readInChange(v.Document(), depth+1); what != "" {
				return what
			}
		case bson.TypeArray:
			if what := p.readInChange(bson.Raw(v.Array()), depth+1); what != "" {
				return what
			}
		}
	}
	return ""
}

// readByString returns what the string s, the value of key, reads of an
// encrypted field, as a phrase for an error, or "": a "$path" with a
// segment that is an encrypted field or a blind index, a whole document
// ($$ROOT, $$CURRENT, a changeDocuments path), or a join field naming one.
func (p *encPlan) readByString(key, s string) string {
	if strings.HasPrefix(s, "$$ROOT") || strings.HasPrefix(s, "$$CURRENT") {
		return fmt.Sprintf("reads the whole document (%q)", s)
	}
	path, isPath := strings.CutPrefix(s, "$")
	if !isPath && !slices.Contains(joinFields, key) {
		return ""
	}
	if name := p.segmentIn(strings.TrimLeft(path, "$")); name != "" {
		return fmt.Sprintf("names the encrypted field %q", name)
	}
	if isPath && slices.Contains(changeDocuments, path) {
		return fmt.Sprintf("reads a whole document (%q)", s)
	}
	return ""
}

// segmentIn returns the encrypted field or blind index that is a segment
// of the dotted path, or "".
func (p *encPlan) segmentIn(path string) string {
	for seg := range strings.SplitSeq(path, ".") {
		if _, ok := p.fields[seg]; ok {
			return seg
		}
		if f, ok := p.bidx[seg]; ok {
			return f.BSON
		}
	}
	return ""
}
