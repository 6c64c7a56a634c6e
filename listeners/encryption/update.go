package encryption

import (
	"reflect"

	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// update encrypts the values an operator update writes to encrypted
// fields and sets their blind indexes beside them. $set and $setOnInsert
// are encrypted; $unset also unsets the blind index; every other operator
// on an encrypted field ($inc, $push, $rename, ...) and an update pipeline
// that touches one are refused, since they would compute on ciphertexts.
//
// Values are bound to the _id the filter pins, when it pins exactly one;
// otherwise (UpdateMany, an upsert by another field) they are bound to the
// collection and field only, which their flags record.
//
// An upsert by an equality on an eq field ({email: v}) arrives with the
// blind index in $setOnInsert, put there by the repository from the
// filter that query rewrote; it becomes the encrypted value and its index,
// unless the update writes the field itself.
func (x *Encryption) update(p *encPlan, coll string, filter, update any, collation *options.Collation) (any, error) {
	u, err := mql.ParseUpdate(update)
	if err != nil {
		return nil, err
	}
	if u.IsPipeline() {
		return update, p.checkPipelineUpdate(u)
	}
	b, err := p.updateBinding(filter, collation)
	if err != nil {
		return nil, err
	}
	written, err := p.written(u)
	if err != nil {
		return nil, err
	}
	var ops bson.D
	for _, op := range u.Operators() {
		out, err := x.updateOperator(p, coll, op, written, b)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 {
			ops = append(ops, bson.E{Key: op.Key, Value: out})
		}
	}
	return ops, nil
}

// updateBinding returns what an update's values are bound to: the _id
// filter pins, unless the server may match another stored _id by it.
func (p *encPlan) updateBinding(filter any, collation *options.Collation) (sealBinding, error) {
	b, err := pinnedBinding(filter)
	if err != nil {
		return b, err
	}
	if b.bound && (!p.idTyped(b.id) || (collation != nil && collation.Locale != "simple")) {
		// The server may match a stored _id of another type (5.0 matches
		// 5) or, under a collation, another string ("ABC" matches "abc"):
		// a value bound to the filter's _id would then not decrypt.
		b = unboundValue
	}
	return b, nil
}

// updateOperator returns the fields of operator op of an update as they
// are sent: encrypted, with their blind indexes beside them. For
// $setOnInsert, the blind indexes of an upsert's filter (seeds) become
// the encrypted values and their indexes of the fields the update does
// not write itself (written).
func (x *Encryption) updateOperator(p *encPlan, coll string, op bson.E, written map[string]bool, b sealBinding) (bson.D, error) {
	fields, err := mql.ToD(op.Value)
	if err != nil {
		return nil, err
	}
	out := make(bson.D, 0, len(fields))
	seeds := map[*encField]bson.RawValue{}
	for _, fe := range fields {
		if out, err = x.updateField(p, coll, op.Key, fe, b, out, seeds); err != nil {
			return nil, err
		}
	}
	for f, v := range seeds {
		if !written[f.BSON] {
			if out, err = x.appendEncrypted(out, f, coll, v, b); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// updateField appends to out field fe of operator op as it is sent, or,
// for the blind index of an upsert's filter in $setOnInsert, records it in
// seeds. It refuses what would compute on a ciphertext or write a blind
// index out of step with its field.
func (x *Encryption) updateField(p *encPlan, coll, op string, fe bson.E, b sealBinding, out bson.D, seeds map[*encField]bson.RawValue) (bson.D, error) {
	if err := p.checkRename(op, fe); err != nil {
		return nil, err
	}
	if bf, exact := p.blindIndexAt(fe.Key); bf != nil && !exact {
		return nil, refuseEncrypted(bf.BSON, op+" of a path under its blind index "+fe.Key)
	}
	if bf, ok := p.bidx[fe.Key]; ok {
		if be, ok := fe.Value.(blindEq); ok && op == "$setOnInsert" {
			seeds[bf] = be.plain
			return out, nil
		}
		return nil, refuseEncrypted(bf.BSON, op+" of its blind index "+fe.Key+" (the listener keeps it)")
	}
	f, exact := p.lookup(fe.Key)
	switch {
	case f == nil:
		return append(out, fe), nil
	case !exact:
		return nil, refuseEncrypted(f.BSON, op+" of the sub-field "+fe.Key)
	}
	switch op {
	case "$set", "$setOnInsert":
		v, err := encodeValue(fe.Value)
		if err != nil {
			return nil, err
		}
		return x.appendEncrypted(out, f, coll, v, b)
	case "$unset":
		out = append(out, fe)
		if f.Eq {
			out = append(out, bson.E{Key: f.BlindIndex(), Value: ""})
		}
		return out, nil
	}
	return nil, refuseEncrypted(f.BSON, op)
}

// written returns the encrypted fields that the update document u writes
// itself.
func (p *encPlan) written(u *mql.Update) (map[string]bool, error) {
	w := map[string]bool{}
	for _, op := range u.Operators() {
		fields, err := mql.ToD(op.Value)
		if err != nil {
			return nil, err
		}
		for _, fe := range fields {
			if f, exact := p.lookup(fe.Key); exact {
				w[f.BSON] = true
			}
		}
	}
	return w, nil
}

// appendEncrypted appends f: the ciphertext of v, and f's blind index.
func (x *Encryption) appendEncrypted(out bson.D, f *encField, coll string, v bson.RawValue, b sealBinding) (bson.D, error) {
	out = append(out, bson.E{Key: f.BSON, Value: primitive.Binary{Subtype: EncryptedSubtype, Data: sealValue(x.current, coll, f.BSON, v, b)}})
	if !f.Eq {
		return out, nil
	}
	h, err := x.blindIndexOf(f.BSON, coll, v)
	if err != nil {
		return nil, err
	}
	return append(out, bson.E{Key: f.BlindIndex(), Value: primitive.Binary{Subtype: bson.TypeBinaryGeneric, Data: h}}), nil
}

// checkRename refuses a $rename to or from an encrypted field or its blind
// index: a ciphertext is bound to its field.
func (p *encPlan) checkRename(op string, fe bson.E) error {
	if op != "$rename" {
		return nil
	}
	to, _ := mql.RenameTarget(fe.Value)
	for _, path := range []string{fe.Key, to} {
		if f, _ := p.lookup(path); f != nil {
			return refuseEncrypted(f.BSON, "$rename")
		}
		if f := p.bidx[path]; f != nil {
			return refuseEncrypted(f.BSON, "$rename of its blind index")
		}
	}
	return nil
}

// checkPipelineUpdate refuses an update pipeline that writes or reads an
// encrypted field or a blind index.
func (p *encPlan) checkPipelineUpdate(u *mql.Update) error {
	for name, f := range p.fields {
		if u.Touches(name) || (f.Eq && u.Touches(f.BlindIndex())) {
			return refuseEncrypted(f.BSON, "an update pipeline")
		}
	}
	for _, st := range u.Stages() {
		for _, s := range st {
			if f := p.refersTo(s.Value, 0); f != nil {
				return refuseEncrypted(f.BSON, "an update pipeline reading it")
			}
		}
	}
	return nil
}

// pinnedBinding returns the binding of values an update with filter writes: to
// the _id the filter's equalities pin, when they pin exactly one.
func pinnedBinding(filter any) (sealBinding, error) {
	eqs, err := mql.Equalities(filter)
	if err != nil {
		return unboundValue, err
	}
	var id *bson.RawValue
	for _, eq := range eqs {
		if eq.Key != "_id" {
			continue
		}
		v, err := encodeValue(eq.Value)
		if err != nil {
			return unboundValue, err
		}
		if id != nil && !canonicalNumber(*id).Equal(canonicalNumber(v)) {
			return unboundValue, nil // no document can match; bind to nothing
		}
		id = &v
	}
	if id == nil {
		return unboundValue, nil
	}
	return boundTo(*id), nil
}

// idTyped reports whether id, canonical, has the BSON type the model's _id
// field stores, so that a value bound to it is bound to the stored _id.
// An _id of interface type is trusted except for numbers, which MongoDB
// matches across types.
func (p *encPlan) idTyped(id bson.RawValue) bool {
	p.idOnce.Do(func() {
		if f := p.schema.ID; f != nil && f.Type.Kind() != reflect.Interface {
			if v, err := encodeValue(reflect.Zero(f.Type).Interface()); err == nil {
				p.idType = canonicalNumber(v).Type
			}
		}
	})
	if p.idType != 0 {
		return p.idType == id.Type
	}
	switch id.Type {
	case bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		return false
	}
	return true
}
