package listeners

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/mgmevents/mgmevents/events"
)

// ErrValidation matches, through errors.Is, every *ValidationError.
var ErrValidation = errors.New("listeners: validation failed")

// Validator validates a struct. go-playground/validator's *Validate has
// this method; any other validator can be adapted to it.
type Validator interface {
	Struct(s any) error
}

// FieldError is one field that failed validation. A model's Validate
// method may return them, alone or joined with errors.Join.
type FieldError struct {
	Field  string
	Reason string
}

// Error returns "field: reason".
func (f FieldError) Error() string {
	if f.Field == "" {
		return f.Reason
	}
	return f.Field + ": " + f.Reason
}

// ValidationError is returned when a model fails validation. It names
// every failing field.
type ValidationError struct {
	Type   reflect.Type
	Fields []FieldError
	Err    error // what the model or the validator returned
}

// Error lists the failing fields.
func (v *ValidationError) Error() string {
	parts := make([]string, len(v.Fields))
	for i, f := range v.Fields {
		parts[i] = f.Error()
	}
	return fmt.Sprintf("listeners: validation of %v failed: %s", v.Type, strings.Join(parts, "; "))
}

// Unwrap returns the underlying error.
func (v *ValidationError) Unwrap() error { return v.Err }

// Is reports whether target is ErrValidation.
func (v *ValidationError) Is(target error) bool { return target == ErrValidation }

// Validation checks each model before it is saved (BeforeSave, as Spring's
// validating listener), so that a failure aborts the write and nothing is
// written. It calls the model's Validate() error method when it has one,
// then the validator, if any.
//
// It validates whole models only: Insert, InsertMany, Save and Update. An
// operator update by filter (UpdateOne, UpdateMany, FindOneAndUpdate)
// changes some fields of documents it never loads, so no model exists to
// validate; such updates are not checked. Guard them with a BeforeUpdate
// listener of your own, or with MongoDB's $jsonSchema collection
// validation.
type Validation struct {
	v Validator
}

// NewValidation returns the listener. v may be nil: then only models'
// Validate methods run.
func NewValidation(v Validator) *Validation { return &Validation{v: v} }

// EventTypes tells the bus that Validation handles BeforeSave only.
func (*Validation) EventTypes() []events.Type { return []events.Type{events.BeforeSave} }

// HandleEvent validates e.Model.
func (l *Validation) HandleEvent(_ context.Context, e *events.Event) error {
	if e.Type != events.BeforeSave || e.Model == nil {
		return nil
	}
	var errs []error
	if m, ok := e.Model.(interface{ Validate() error }); ok {
		if err := m.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.v != nil {
		if err := l.v.Struct(e.Model); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := errors.Join(errs...)
	return &ValidationError{Type: e.ModelType, Fields: fieldErrors(err, nil), Err: err}
}

// fieldErrors flattens err into field errors: ours, errors.Join trees, and
// slices of errors with a Field() string method, which is the shape of
// go-playground/validator's ValidationErrors.
func fieldErrors(err error, out []FieldError) []FieldError {
	if fe, ok := err.(FieldError); ok {
		return append(out, fe)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = fieldErrors(e, out)
		}
		return out
	}
	if rv := reflect.ValueOf(err); rv.Kind() == reflect.Slice {
		n := len(out)
		for i := range rv.Len() {
			el := rv.Index(i)
			f, ok := el.Interface().(interface{ Field() string })
			e, ok2 := el.Interface().(error)
			if ok && ok2 {
				reason := e.Error()
				if t, ok := el.Interface().(interface{ Tag() string }); ok {
					reason = "failed on the '" + t.Tag() + "' rule"
				}
				out = append(out, FieldError{Field: f.Field(), Reason: reason})
			}
		}
		if len(out) > n {
			return out
		}
	}
	return append(out, FieldError{Reason: err.Error()})
}
