package model

import (
	"fmt"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/bson/primitive"
)

// AuditKind is what an `audit` tag records.
type AuditKind uint8

// The audit kinds: Spring's @CreatedDate, @LastModifiedDate, @CreatedBy and
// @LastModifiedBy, and the soft-delete marks that listeners.SoftDelete sets.
const (
	CreatedAt AuditKind = iota + 1
	UpdatedAt
	CreatedBy
	UpdatedBy
	DeletedAt
	DeletedBy
)

// AuditField is a field with an `audit` tag: audit:"createdAt",
// "updatedAt", "deletedAt" (time.Time, *time.Time or primitive.DateTime),
// "createdBy", "updatedBy" or "deletedBy" (any type the auditor's value can
// be assigned to).
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
	case "deletedAt":
		a.Kind = DeletedAt
	case "deletedBy":
		a.Kind = DeletedBy
	default:
		return a, s.tagErr(f.Name, `audit:"`+tag+`"`, `unknown audit kind; want createdAt, updatedAt, createdBy, updatedBy, deletedAt or deletedBy`)
	}
	for _, b := range s.Audit {
		if b.Kind == a.Kind && (a.Kind == DeletedAt || a.Kind == DeletedBy) { // soft delete needs one mark
			return a, s.tagErr(f.Name, `audit:"`+tag+`"`, "a second "+tag+" field (the first is "+b.Name+")")
		}
	}
	if a.Kind == CreatedAt || a.Kind == UpdatedAt || a.Kind == DeletedAt {
		if t := f.Type; t != timeType && t != timePtrType && t != dateTimeType {
			return a, s.tagErr(f.Name, `audit:"`+tag+`"`, fmt.Sprintf("needs a time.Time, *time.Time or primitive.DateTime field, not %v", t))
		}
	}
	return a, nil
}

// AuditOf returns the field with audit kind k, or nil.
func (s *Schema) AuditOf(k AuditKind) *AuditField {
	for i := range s.Audit {
		if s.Audit[i].Kind == k {
			return &s.Audit[i]
		}
	}
	return nil
}
