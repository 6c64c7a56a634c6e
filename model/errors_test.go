package model_test

import (
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
)

// TestSentinelsNameTheirPackage: every sentinel's text starts with the
// package's name, as every other error of the module does.
func TestSentinelsNameTheirPackage(t *testing.T) {
	for _, err := range []error{model.ErrInvalidTag, model.ErrUnsupportedType} {
		assert.True(t, strings.HasPrefix(err.Error(), "model: "), err.Error())
	}
}
