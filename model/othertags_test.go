package model_test

import (
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// placed is inlined into otherTagged, and its tags count as its own.
type placed struct {
	Zone string `bson:"zone" region:"zone"`
}

type otherTagged struct {
	mgm.DefaultModel `bson:",inline"`
	placed           `bson:",inline"`
	Name             string `json:"name" bson:"name" foo:"a \"b\""`
	Home             string `bson:"home" policy:"region" auto:"uuid"`
	By               string `bson:"by" audit:"createdBy" index:""`
	Hidden           string `bson:"-" region:"hidden"`
	quiet            string `region:"unexported"`
}

// TestOtherTags: the schema records every struct-tag key that model does
// not read, of every field walked (inlined, skipped and unexported ones
// included), as written, and none of its own keys.
func TestOtherTags(t *testing.T) {
	_ = otherTagged{}.quiet
	s, err := model.For[*otherTagged]()
	require.NoError(t, err)
	var mine []model.FieldTag
	for _, ft := range s.OtherTags {
		assert.NotContains(t, []string{"bson", "policy", "auto", "audit", "index"}, ft.Key, "model's own keys are not other tags")
		if ft.Key != "json" || ft.Field == "Name" {
			mine = append(mine, ft)
		}
	}
	assert.Equal(t, []model.FieldTag{
		{Field: "Zone", Key: "region", Tag: `region:"zone"`},
		{Field: "Name", Key: "json", Tag: `json:"name"`},
		{Field: "Name", Key: "foo", Tag: `foo:"a \"b\""`},
		{Field: "Hidden", Key: "region", Tag: `region:"hidden"`},
		{Field: "quiet", Key: "region", Tag: `region:"unexported"`},
	}, mine)
	assert.Contains(t, s.OtherTags, model.FieldTag{Field: "ID", Key: "json", Tag: `json:"id"`}, "inside mgm.DefaultModel too")

	s.OtherTags[0].Key = "changed"
	again, err := model.For[*otherTagged]()
	require.NoError(t, err)
	assert.Equal(t, "json", again.OtherTags[0].Key, "each copy its own")
}
