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
	Secret           string `bson:"secret" policy:"encrypt"`
}

type needsOutbox struct{}

func (*needsOutbox) NeedsPolicies() []string { return []string{"outbox", "encrypt"} }

func TestPolicyTagsIncludeWhatTheModelNeeds(t *testing.T) {
	s, err := model.Of(reflect.TypeFor[*needy]())
	require.NoError(t, err)
	assert.Equal(t, []string{"encrypt", "outbox"}, s.PolicyTags(), "each tag once, the struct's tags first")
}

// TestPolicyFields: model records, per policy name, the fields and their
// options, for any name (it knows none).
func TestPolicyFields(t *testing.T) {
	type anyPolicy struct {
		mgm.DefaultModel `bson:",inline"`
		Region           string `bson:"region"`
		Home             string `bson:"home" policy:"region,home,k=v"`
		Team             string `bson:"team" policy:"team"`
		Owner            string `bson:"owner" policy:"team"`
	}
	s, err := model.For[*anyPolicy]()
	require.NoError(t, err)
	assert.Equal(t, []string{"region", "team"}, s.PolicyTags())
	region := s.Policy("region")
	require.Len(t, region, 1)
	assert.Equal(t, "home", region[0].BSON)
	assert.Equal(t, []string{"home", "k=v"}, region[0].Options)
	assert.True(t, region[0].Has("home"))
	assert.False(t, region[0].Has("k"))
	assert.Equal(t, `policy:"region,home,k=v"`, region[0].Tag)
	team := s.Policy("team")
	require.Len(t, team, 2)
	assert.Equal(t, "Owner", team[1].Name)
	assert.Nil(t, s.Policy("tenant"))
	assert.Equal(t, "Team", s.PolicyOf("team").Name)
	assert.Nil(t, s.PolicyOf("region"))
}

// TestPolicyTagErrors: bad syntax, an empty name and a policy key given
// twice (which reflect.StructTag.Lookup would drop silently) are refused
// with the type and the field named.
func TestPolicyTagErrors(t *testing.T) {
	type twice struct {
		mgm.DefaultModel `bson:",inline"`
		//lint:ignore SA5008 the repeated key is the mistake under test
		X string `bson:"x" policy:"tenant" policy:"encrypt"`
	}
	type empty struct {
		mgm.DefaultModel `bson:",inline"`
		X                string `bson:"x" policy:""`
	}
	type noName struct {
		mgm.DefaultModel `bson:",inline"`
		X                string `bson:"x" policy:",eq"`
	}
	type badName struct {
		mgm.DefaultModel `bson:",inline"`
		X                string `bson:"x" policy:"ten ant"`
	}
	type emptyOption struct {
		mgm.DefaultModel `bson:",inline"`
		X                string `bson:"x" policy:"encrypt,"`
	}
	type optionTwice struct {
		mgm.DefaultModel `bson:",inline"`
		X                string `bson:"x" policy:"encrypt,eq,eq"`
	}
	type unexported struct {
		mgm.DefaultModel `bson:",inline"`
		x                string `policy:"tenant"`
	}
	type skipped struct {
		mgm.DefaultModel `bson:",inline"`
		X                string `bson:"-" policy:"tenant"`
	}
	type Inner struct {
		Region string `bson:"region" policy:"region"`
	}
	type shadowedFirst struct { // the driver stores Region, not Inner.Region
		mgm.DefaultModel `bson:",inline"`
		Inner            `bson:",inline"`
		Region           string `bson:"region"`
	}
	type shadowedAfter struct {
		mgm.DefaultModel `bson:",inline"`
		Region           string `bson:"region"`
		Inner            `bson:",inline"`
	}
	type byPointer struct { // the driver inlines *Inner's fields
		mgm.DefaultModel `bson:",inline"`
		*Inner           `bson:",inline"`
	}
	_ = unexported{}.x
	for _, tc := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[*twice](), "field X"},
		{reflect.TypeFor[*empty](), "no policy name"},
		{reflect.TypeFor[*noName](), "no policy name"},
		{reflect.TypeFor[*badName](), `policy name "ten ant"`},
		{reflect.TypeFor[*emptyOption](), "an empty option"},
		{reflect.TypeFor[*optionTwice](), `option "eq" given twice`},
		{reflect.TypeFor[*unexported](), "unexported"},
		{reflect.TypeFor[*skipped](), `bson:"-"`},
		{reflect.TypeFor[*shadowedFirst](), "shadows the field"},
		{reflect.TypeFor[*shadowedAfter](), "shadows the field"},
		{reflect.TypeFor[*byPointer](), "inline pointer"},
	} {
		_, err := model.Of(tc.t)
		require.ErrorIs(t, err, model.ErrInvalidTag, tc.t.String())
		assert.ErrorContains(t, err, tc.t.String(), "the type is named")
		assert.ErrorContains(t, err, tc.want)
	}
	_, err := model.Of(reflect.TypeFor[*twice]())
	assert.ErrorContains(t, err, "the policy key is given twice")
}
