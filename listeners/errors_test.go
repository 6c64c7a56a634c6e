package listeners_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/listeners"
	"github.com/stretchr/testify/assert"
)

// TestValidationErrorsNameTheirPackage: the sentinel and the error a
// failed validation returns start with the package's name.
func TestValidationErrorsNameTheirPackage(t *testing.T) {
	ve := &listeners.ValidationError{Type: reflect.TypeFor[*Guest](), Fields: []listeners.FieldError{{Field: "Name", Reason: "is required"}}}
	for _, err := range []error{listeners.ErrValidation, ve} {
		assert.True(t, strings.HasPrefix(err.Error(), "listeners: "), err.Error())
	}
}
