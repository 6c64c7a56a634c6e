package encryption

import (
	"fmt"
	"strings"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// refuseEncrypted is the error for what cannot be done on encrypted field field.
func refuseEncrypted(field, what string) error {
	return fmt.Errorf("encryption: %s on encrypted field %q cannot be answered: %w", what, field, ErrEncryptedField)
}

// lookup returns the encrypted field path names or lies in, and whether
// path is the field itself rather than a part of it.
func (p *encPlan) lookup(path string) (*encField, bool) {
	top, _, _ := strings.Cut(path, ".")
	f := p.fields[top]
	return f, f != nil && top == path
}

// query rewrites or refuses what a BeforeQuery event would send: its
// filter, its pipeline, its sort and the field of a Distinct. When final
// (Check), it changes nothing and refuses what was not rewritten. A
// collation is refused on a filter or pipeline that compares an
// encrypted field: one that was rewritten, or, when final, one that
// names one.
func (x *Encryption) query(p *encPlan, e *events.Event, final bool) error {
	if err := p.checkOptions(e); err != nil {
		return err
	}
	if e.Op == events.OpWatch {
		return p.refuseInChangeStream(e.Pipeline)
	}
	if e.Filter != nil {
		var f bson.D
		var changed bool
		var err error
		if final {
			err = p.checkFilter(e.Filter, 0)
		} else {
			f, changed, err = x.filter(p, e.Collection, e.Filter, 0)
		}
		if err != nil {
			return err
		}
		if err := p.refuseCollation(e, changed || (final && mentions(p, e.Filter))); err != nil {
			return err
		}
		if changed {
			e.Filter = f
		}
	}
	if e.Pipeline != nil {
		st, changed, err := x.pipeline(p, e.Collection, e.Pipeline, 0, final)
		if err != nil {
			return err
		}
		if err := p.refuseCollation(e, changed || (final && mentions(p, e.Pipeline))); err != nil {
			return err
		}
		if changed {
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

// refuseCollation refuses a collation other than "simple" on a query that
// compares an encrypted field (compares): under it MongoDB would match
// values (such as "A@X" and "a@x") whose blind indexes differ.
func (p *encPlan) refuseCollation(e *events.Event, compares bool) error {
	if !compares || e.Collation == nil || e.Collation.Locale == "simple" {
		return nil
	}
	return fmt.Errorf("encryption: collation %q on a query that compares an encrypted field: blind indexes compare bytes: %w", e.Collation.Locale, ErrEncryptedField)
}

const maxEncDepth = 100
