package softdelete

import (
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// marks are a model's softdelete fields: at, and by or nil.
type marks struct {
	schema *model.Schema
	at, by *model.Field
}

// marksOf returns the softdelete fields of the model of s, and whether it
// has any. It refuses, naming the field and its tag, a field whose tag is
// neither policy:"softdelete,at" nor policy:"softdelete,by", a second
// field of either, an at field of a type that holds no time, and a by
// field without an at field, which would mark nothing.
func marksOf(s *model.Schema) (marks, bool, error) {
	m := marks{schema: s}
	fields := s.Policy("softdelete")
	for i := range fields {
		f := &fields[i]
		var slot **model.Field
		switch {
		case len(f.Options) == 1 && f.Options[0] == "at":
			slot = &m.at
		case len(f.Options) == 1 && f.Options[0] == "by":
			slot = &m.by
		default:
			return marks{}, false, f.Err(s.Type, `want policy:"softdelete,at" (the mark) or policy:"softdelete,by" (who deleted)`)
		}
		if *slot != nil {
			return marks{}, false, f.Err(s.Type, "a second "+f.Tag+" field (the first is "+(*slot).Name+")")
		}
		*slot = &f.Field
	}
	switch {
	case m.at != nil && !model.IsTime(m.at.Type):
		return marks{}, false, s.PolicyOf(m.at.BSON).Err(s.Type, fmt.Sprintf("needs a time.Time, *time.Time or primitive.DateTime field, not %v", m.at.Type))
	case m.at == nil && m.by != nil:
		return marks{}, false, s.PolicyOf(m.by.BSON).Err(s.Type, `a policy:"softdelete,by" field needs a policy:"softdelete,at" field, the mark`)
	}
	return m, m.at != nil, nil
}

// names returns the BSON names of the softdelete fields.
func (m marks) names() []string {
	names := []string{m.at.BSON}
	if m.by != nil {
		names = append(names, m.by.BSON)
	}
	return names
}

// keepUp brings the model of e, which a soft delete marked, up to date
// with the marks it stored, so that the model says it is deleted, and by
// whom; the repository leaves a policy's fields to the policy.
func (m marks) keepUp(e *events.Event) {
	if e.Op != events.OpDelete || e.DeletedCount != 1 || e.Update == nil || reflect.TypeOf(e.Model) != m.schema.Type {
		return
	}
	u, err := mql.ParseUpdate(e.Update)
	if err != nil || u.IsPipeline() {
		return
	}
	set, _, err := u.Operator("$set")
	if err != nil {
		return
	}
	mv := reflect.ValueOf(e.Model).Elem()
	for _, kv := range set {
		for _, f := range []*model.Field{m.at, m.by} {
			if f != nil && f.BSON == kv.Key {
				setField(f.Value(mv), kv.Value)
			}
		}
	}
}

// setField decodes value into fv as a stored document would be, or leaves
// fv as it is when it cannot.
func setField(fv reflect.Value, value any) {
	raw, err := bson.Marshal(bson.D{{Key: "v", Value: value}})
	if err != nil {
		return
	}
	p := reflect.New(fv.Type())
	if err := bson.Raw(raw).Lookup("v").Unmarshal(p.Interface()); err == nil {
		fv.Set(p.Elem())
	}
}
