package opinfo_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mgmevents/mgmevents/internal/opinfo"
	"github.com/mgmevents/mgmevents/repo"
	"github.com/stretchr/testify/assert"
)

// quota is an error of an application's listener that names its kind.
type quota struct{}

func (quota) Error() string     { return "quota exceeded" }
func (quota) ErrorType() string { return "quota" }

// TestErrorTypeKinded: errors are classified by their ErrorType method,
// repo's sentinels as any other, wrapped or not.
func TestErrorTypeKinded(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("Save: %w", repo.ErrVersionConflict), "version_conflict"},
		{fmt.Errorf("FindByID: %w", repo.ErrInvalidArgument), "invalid_argument"},
		{repo.ErrNilModel, "invalid_argument"},
		{fmt.Errorf("a listener: %w", quota{}), "quota"},
		{errors.New("plain"), "_OTHER"},
	} {
		assert.Equal(t, c.want, opinfo.ErrorType(c.err), c.err.Error())
		assert.Equal(t, c.want, opinfo.Describe(c.err), c.err.Error())
	}
}
