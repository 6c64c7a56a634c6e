package model

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/kamva/mgm/v3"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// AuditKind is what an `audit` tag records.
type AuditKind uint8

// The audit kinds: Spring's @CreatedDate, @LastModifiedDate, @CreatedBy and
// @LastModifiedBy.
const (
	CreatedAt AuditKind = iota + 1
	UpdatedAt
	CreatedBy
	UpdatedBy
)

// AuditField is a field with an `audit` tag: audit:"createdAt" or
// "updatedAt" (time.Time, *time.Time or primitive.DateTime), "createdBy" or
// "updatedBy" (any type the auditor's value can be assigned to).
type AuditField struct {
	Field
	Kind AuditKind
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	timePtrType  = reflect.TypeFor[*time.Time]()
	dateTimeType = reflect.TypeFor[primitive.DateTime]()
)

func parseAudit(s *Schema, f Field, tag string) (AuditField, error) {
	kinds := map[string]AuditKind{"createdAt": CreatedAt, "updatedAt": UpdatedAt, "createdBy": CreatedBy, "updatedBy": UpdatedBy}
	k, ok := kinds[tag]
	if !ok {
		return AuditField{}, s.tagErr(f.Name, `audit:"`+tag+`"`, `unknown audit kind; want createdAt, updatedAt, createdBy or updatedBy`)
	}
	return auditField(s, f, k, `audit:"`+tag+`"`)
}

// auditField checks that f can hold a value of kind k.
func auditField(s *Schema, f Field, k AuditKind, label string) (AuditField, error) {
	a := AuditField{Field: f, Kind: k}
	if k == CreatedAt || k == UpdatedAt {
		if t := f.Type; !IsTime(t) {
			return a, s.tagErr(f.Name, label, fmt.Sprintf("needs a time.Time, *time.Time or primitive.DateTime field, not %v", t))
		}
	}
	return a, nil
}

// IsTime reports whether t is a type that holds a stored time:
// time.Time, *time.Time or primitive.DateTime.
func IsTime(t reflect.Type) bool { return t == timeType || t == timePtrType || t == dateTimeType }

// AuditOf returns the field with audit kind k, or nil.
func (s *Schema) AuditOf(k AuditKind) *AuditField {
	for i := range s.Audit {
		if s.Audit[i].Kind == k {
			return &s.Audit[i]
		}
	}
	return nil
}

var dateFieldsType = reflect.TypeFor[mgm.DateFields]()

// checkDateFields refuses an audit:"createdAt" or "updatedAt" field beside
// a stored mgm.DateFields (mgm.DefaultModel's created_at and updated_at),
// whose fields mgm's hooks set and Auditing fills as those kinds already:
// the document would store two creation, or two modification, times. A
// tagged field stored as created_at or updated_at itself shadows
// DateFields' (the shallower field wins), and is accepted.
func (s *Schema) checkDateFields() error {
	names := map[AuditKind]string{CreatedAt: "CreatedAt", UpdatedAt: "UpdatedAt"}
	for _, a := range s.Audit {
		name, ok := names[a.Kind]
		if !ok || !s.has(a.Field) {
			continue
		}
		for _, f := range s.Fields {
			if f.Name != name || len(f.Index) < 2 || s.Struct.FieldByIndex(f.Index[:len(f.Index)-1]).Type != dateFieldsType {
				continue
			}
			tag := `audit:"` + lowerFirst(name) + `"`
			return s.tagErr(a.Name, tag, fmt.Sprintf(
				"the model embeds mgm.DefaultModel (mgm.DateFields), whose %s (%s) already records this time, so the document would store it twice: "+
					"drop the field and use DefaultModel's %s (Auditing fills it), or embed mgm.IDField instead of mgm.DefaultModel to keep %s",
				name, f.BSON, name, a.Name))
		}
	}
	return nil
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }
