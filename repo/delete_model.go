package repo

import (
	"reflect"
	"strings"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// keepUp brings model m, whose document a delete changed instead of
// removing it (a soft delete), up to date with update, the update sent:
// the model's top-level fields that $set or $unset write take the values
// stored, and those $inc adds to (the version) are incremented, so that
// a later Save of m finds its document. Fields a `policy` tag names are
// the policy's: the update may hold what the policy stores for them (a
// ciphertext, say), so they keep their values, and a policy that changes
// them in a delete brings the model up to date itself, on AfterDelete.
// Values it cannot apply are left alone, never half set.
func (r *Repository[T]) keepUp(m T, update any) {
	u, err := mql.ParseUpdate(update)
	if err != nil || u.IsPipeline() {
		return
	}
	v := reflect.ValueOf(m).Elem()
	for _, op := range u.Operators() {
		fields, err := mql.ToD(op.Value)
		if err != nil {
			continue
		}
		for _, kv := range fields {
			f := r.schema.FieldByBSON(kv.Key)
			if f == nil || strings.Contains(kv.Key, ".") || r.schema.PolicyOf(kv.Key) != nil {
				continue
			}
			fv := f.Value(v)
			switch op.Key {
			case "$set":
				r.setField(fv, kv.Value)
			case "$unset":
				fv.SetZero()
			case "$inc":
				if n := reflect.ValueOf(kv.Value); n.CanInt() && fv.CanInt() {
					fv.SetInt(fv.Int() + n.Int())
				}
			}
		}
	}
}

// setField decodes value into fv as the repository's registry decodes a
// stored document, or leaves fv as it is when it cannot.
func (r *Repository[T]) setField(fv reflect.Value, value any) {
	raw, err := bsonio.Marshal(r.reg, bson.D{{Key: "v", Value: value}})
	if err != nil {
		return
	}
	p := reflect.New(fv.Type())
	if err := raw.Lookup("v").UnmarshalWithRegistry(r.reg, p.Interface()); err == nil {
		fv.Set(p.Elem())
	}
}
