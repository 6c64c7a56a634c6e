package encryption

import (
	"bytes"
	"context"
	"crypto/hmac"
	"fmt"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// errLeftBehind wraps what Check finds: a value or a condition on an
// encrypted field that a listener running after Encryption (a policy
// registered later, or of a higher Order) left or put back.
func errLeftBehind(field, what string) error {
	return fmt.Errorf("encryption: %s on encrypted field %q, which the encryption did not rewrite (in a sub-pipeline, or put there by a policy that ran after it): %w", what, field, ErrEncryptedField)
}

// Check verifies, once every listener of a Before* event has run, policies
// registered after Encryption included, that what will be sent still
// obeys it: a document holds a ciphertext in every encrypted field it has
// and the right blind index beside each eq field; an update writes
// encrypted fields only with ciphertexts and blind indexes only in step
// with them; a filter or pipeline names an encrypted field only through
// its blind index or $exists; what a listener adds to a write (Extra,
// Tombstone) writes no encrypted field or blind index, by a $rename's
// target either. Anything else fails closed.
func (x *Encryption) Check(_ context.Context, e *events.Event) error {
	p, err := x.planFor(e)
	if p == nil || err != nil {
		return err
	}
	if err := policy.RefuseAdded(e, ErrEncryptedField, "an encrypted field or a blind index", p.paths...); err != nil {
		return err
	}
	switch e.Type {
	case events.BeforeSave:
		if e.Document != nil {
			return x.checkDocument(p, e.Collection, e.Document)
		}
	case events.BeforeQuery:
		if err := x.query(p, e, true); err != nil {
			return err
		}
		return x.reaches(e)
	case events.BeforeUpdate, events.BeforeDelete:
		if e.Update != nil {
			return p.checkUpdate(e.Update)
		}
	}
	return nil
}

// checkDocument checks a document about to be written.
func (x *Encryption) checkDocument(p *encPlan, coll string, doc bson.Raw) error {
	id, _ := doc.LookupErr("_id")
	for name, f := range p.fields {
		v, err := doc.LookupErr(name)
		if err != nil {
			if f.Eq {
				if _, err := doc.LookupErr(f.BlindIndex()); err == nil {
					return errLeftBehind(name, "a blind index without its field")
				}
			}
			continue
		}
		sub, payload, ok := v.BinaryOK()
		if !ok || sub != EncryptedSubtype {
			return errLeftBehind(name, "a plaintext "+v.Type.String())
		}
		if _, reason := parseSealed(payload); reason != "" {
			return errLeftBehind(name, "a value that is not a ciphertext ("+reason+")")
		}
		if !f.Eq {
			continue
		}
		plain, err := x.decryptValue(coll, name, id, v)
		if err != nil {
			return errLeftBehind(name, "a ciphertext that does not decrypt here")
		}
		want, err := x.blindIndexOf(name, coll, plain)
		if err != nil {
			return err
		}
		_, got, _ := doc.Lookup(f.BlindIndex()).BinaryOK()
		if !hmac.Equal(got, want) {
			return errLeftBehind(name, "a blind index that is not the value's")
		}
	}
	return nil
}

// checkFilter refuses a filter that names an encrypted field other than in
// {f: {$exists: b}}: every equality was rewritten into a blind-index
// lookup, so one left is plaintext a later listener added.
func (p *encPlan) checkFilter(filter any, depth int) error {
	if depth > maxEncDepth {
		return fmt.Errorf("encryption: filter nested deeper than %d levels: %w", maxEncDepth, mql.ErrBadDocument)
	}
	d, err := mql.ToD(filter)
	if err != nil {
		return err
	}
	if depth == 0 {
		if err := p.refuseForbidden(d); err != nil {
			return err
		}
	}
	for _, el := range d {
		switch el.Key {
		case "$and", "$or", "$nor":
			clauses, err := mql.Array(el.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", el.Key, err)
			}
			for _, c := range clauses {
				if err := p.checkFilter(c, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		if err := p.checkFilterOperator(el); err != nil {
			return err
		}
		f, exact := p.lookup(el.Key)
		switch {
		case f == nil:
			continue
		case !exact:
			return errLeftBehind(f.BSON, "a condition on the sub-field "+el.Key)
		}
		ops, isOps, err := queryOperators(el.Value)
		if err != nil {
			return err
		}
		if !isOps {
			return errLeftBehind(f.BSON, "an unrewritten equality")
		}
		for _, op := range ops {
			if op.Key != "$exists" {
				return errLeftBehind(f.BSON, "an unrewritten "+op.Key)
			}
		}
	}
	return nil
}

// checkUpdate checks a final update: encrypted fields are set only to
// ciphertexts, or unset, and each blind index is set or unset only with
// its field, by the same operator.
func (p *encPlan) checkUpdate(update any) error {
	u, err := mql.ParseUpdate(update)
	if err != nil {
		return err
	}
	if u.IsPipeline() {
		return p.checkPipelineUpdate(u)
	}
	for _, op := range u.Operators() {
		fields, err := mql.ToD(op.Value)
		if err != nil {
			return err
		}
		set := map[string]bool{}
		for _, fe := range fields {
			if err := p.checkRename(op.Key, fe); err != nil {
				return err
			}
			if f, _ := p.blindIndexAt(fe.Key); f != nil {
				continue // checked below, against its field
			}
			f, exact := p.lookup(fe.Key)
			switch {
			case f == nil:
				continue
			case !exact:
				return errLeftBehind(f.BSON, op.Key+" of the sub-field "+fe.Key)
			}
			switch op.Key {
			case "$set", "$setOnInsert":
				if !isCiphertext(fe.Value) {
					return errLeftBehind(f.BSON, op.Key+" of a plaintext value")
				}
			case "$unset":
			default:
				return errLeftBehind(f.BSON, op.Key)
			}
			set[f.BSON] = true
		}
		for _, fe := range fields {
			f, exact := p.blindIndexAt(fe.Key)
			switch {
			case f == nil:
				continue
			case !exact:
				return refuseEncrypted(f.BSON, op.Key+" of a path under its blind index "+fe.Key)
			case !set[f.BSON]:
				return errLeftBehind(f.BSON, op.Key+" of its blind index without the field")
			}
			if op.Key != "$unset" && !isBlindIndexValue(fe.Value) {
				return errLeftBehind(f.BSON, op.Key+" of its blind index to something else than a blind index")
			}
		}
		for name, f := range p.fields {
			if set[name] && f.Eq && !hasKey(fields, f.BlindIndex()) {
				return errLeftBehind(name, op.Key+" without its blind index")
			}
		}
	}
	return nil
}

// blindIndexAt returns the eq field whose blind index path is or lies in,
// and whether path is the blind index itself.
func (p *encPlan) blindIndexAt(path string) (*encField, bool) {
	for name, f := range p.bidx {
		if path == name {
			return f, true
		}
		if len(path) > len(name) && path[len(name)] == '.' && path[:len(name)] == name {
			return f, false
		}
	}
	return nil, false
}

func hasKey(d bson.D, key string) bool {
	for _, e := range d {
		if e.Key == key {
			return true
		}
	}
	return false
}

// isCiphertext reports whether v is a value of EncryptedSubtype with a
// readable header.
func isCiphertext(v any) bool {
	rv, err := encodeValue(v)
	if err != nil {
		return false
	}
	sub, payload, ok := rv.BinaryOK()
	if !ok || sub != EncryptedSubtype {
		return false
	}
	_, reason := parseSealed(payload)
	return reason == ""
}

// isBlindIndexValue reports whether v has the shape of a blind index.
func isBlindIndexValue(v any) bool {
	b, ok := v.(primitive.Binary)
	return ok && b.Subtype == bson.TypeBinaryGeneric && len(b.Data) == BlindIndexLen && !bytes.Equal(b.Data, make([]byte, BlindIndexLen))
}

// mentions reports whether v, a final filter or pipeline, names an
// encrypted field or a blind index as a key anywhere.
func mentions(p *encPlan, v any) bool {
	var raw bson.Raw
	var err error
	if st, serr := mql.Stages(v); serr == nil && mql.IsPipeline(v) {
		raw, err = bsonio.Marshal(registry, bson.D{{Key: "p", Value: st}})
	} else {
		raw, err = bsonio.Marshal(registry, v)
	}
	if err != nil {
		return true
	}
	names := make([]string, 0, 2*len(p.fields))
	for name, f := range p.fields {
		names = append(names, name)
		if f.Eq {
			names = append(names, f.BlindIndex())
		}
	}
	return keyIn(raw, names, 0) != ""
}
