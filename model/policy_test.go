package model_test

import (
	"reflect"
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needy embeds a type that says which policy it needs.
type needy struct {
	mgm.DefaultModel `bson:",inline"`
	needsOutbox      `bson:"-"`
	Secret           string `bson:"secret" encrypt:""`
}

type needsOutbox struct{}

func (*needsOutbox) NeedsPolicies() []string { return []string{"outbox", "encrypt"} }

func TestPolicyTagsIncludeWhatTheModelNeeds(t *testing.T) {
	s, err := model.Of(reflect.TypeFor[*needy]())
	require.NoError(t, err)
	assert.Equal(t, []string{"encrypt", "outbox"}, s.PolicyTags(), "each tag once, the struct's tags first")
}
