package encryption

import (
	"fmt"
	"strings"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// A change stream's pipeline (Watch) sees change events, whose stored
// fields are under fullDocument, fullDocumentBeforeChange and
// updateDescription.updatedFields, and which a $replaceRoot can lift to the
// top. Blind indexes are not rewritten there: a pipeline that names an
// encrypted field or a blind index anywhere, as a key or as a "$path", is
// refused, and the full documents delivered are decrypted as a read's
// (when every stage passes them through unchanged).

// refuseInChangeStream refuses pipeline, a change stream's, when a key or
// a field path in it has a segment that is an encrypted field or a blind
// index.
func (p *encPlan) refuseInChangeStream(pipeline any) error {
	st, err := mql.Stages(pipeline)
	if err != nil {
		return fmt.Errorf("encryption: a change stream's pipeline: %w: %w", ErrEncryptedField, err)
	}
	raw, err := bsonio.Marshal(registry, bson.D{{Key: "$pipeline", Value: st}})
	if err != nil {
		return fmt.Errorf("encryption: a change stream's pipeline: %w: %w", ErrEncryptedField, err)
	}
	if name := p.namedInChange(raw, 0); name != "" {
		return fmt.Errorf("encryption: a change stream's pipeline names the encrypted field %q, which cannot be matched or computed on there: %w", name, ErrEncryptedField)
	}
	return nil
}

// namedInChange returns the first encrypted field or blind index that a
// key or a "$path" string in doc names, as one of its dotted segments.
func (p *encPlan) namedInChange(doc bson.Raw, depth int) string {
	if depth > maxEncDepth {
		return "(nesting deeper than 100)"
	}
	elems, err := doc.Elements()
	if err != nil {
		return "(unreadable BSON)"
	}
	for _, el := range elems {
		if name := p.segmentIn(el.Key()); name != "" {
			return name
		}
		v := el.Value()
		switch v.Type {
		case bson.TypeString:
			if s := v.StringValue(); strings.HasPrefix(s, "$") {
				if name := p.segmentIn(strings.TrimLeft(s, "$")); name != "" {
					return name
				}
			}
		case bson.TypeEmbeddedDocument:
			if name := p.namedInChange(v.Document(), depth+1); name != "" {
				return name
			}
		case bson.TypeArray:
			if name := p.namedInChange(bson.Raw(v.Array()), depth+1); name != "" {
				return name
			}
		}
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
