package model

import "reflect"

// parseTenant records f as the model's tenant field: tenant:"id" on one
// string field, which holds the tenant a document belongs to.
func (s *Schema) parseTenant(f Field, tag string, otherTags bool) error {
	switch {
	case tag != "id":
		return s.tagErr(f.Name, `tenant:"`+tag+`"`, `unknown tenant tag; want tenant:"id"`)
	case f.Type.Kind() != reflect.String:
		return s.tagErr(f.Name, `tenant:"id"`, "the tenant field must be a string, not "+f.Type.String())
	case f.BSON == "_id":
		return s.tagErr(f.Name, `tenant:"id"`, "the tenant cannot be the _id")
	case otherTags:
		return s.tagErr(f.Name, `tenant:"id"`, "the tenant field cannot also be an auto or audit field")
	case s.Tenant != nil:
		return s.tagErr(f.Name, `tenant:"id"`, "a second tenant field (the first is "+s.Tenant.Name+")")
	}
	s.Tenant = &f
	return nil
}
