package model

import (
	"fmt"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/bson/primitive"
)

// AuditKind is what an `audit` tag records.
type AuditKind uint8

// The audit kinds, Spring's @CreatedDate, @LastModifiedDate, @CreatedBy and
// @LastModifiedBy.
const (
	CreatedAt AuditKind = iota + 1
	UpdatedAt
	CreatedBy
	UpdatedBy
)

// AuditField is a field with an `audit` tag: audit:"createdAt",
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
	a := AuditField{Field: f}
	switch tag {
	case "createdAt":
		a.Kind = CreatedAt
	case "updatedAt":
		a.Kind = UpdatedAt
	case "createdBy":
		a.Kind = CreatedBy
	case "updatedBy":
		a.Kind = UpdatedBy
	default:
		return a, s.tagErr(f.Name, `audit:"`+tag+`"`, `unknown audit kind; want createdAt, updatedAt, createdBy or updatedBy`)
	}
	if a.Kind == CreatedAt || a.Kind == UpdatedAt {
		if t := f.Type; t != timeType && t != timePtrType && t != dateTimeType {
			return a, s.tagErr(f.Name, `audit:"`+tag+`"`, fmt.Sprintf("needs a time.Time, *time.Time or primitive.DateTime field, not %v", t))
		}
	}
	return a, nil
}
