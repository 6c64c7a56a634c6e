package model

import (
	"reflect"
	"testing"

	"github.com/mgmevents/mgmevents/internal/bsonio"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bsonTag names each field as the driver's encoder does, for tags go vet
// would flag in a type declaration too, such as a bare `name`.
func TestBSONTagAgreesWithTheEncoder(t *testing.T) {
	tags := []reflect.StructTag{``, `bare`, `bson:"b"`, `bson:""`, `bson:",omitempty"`, `json:"j"`, `bson:"-,omitempty"`, `other,omitempty`}
	var fields []reflect.StructField
	for i, tag := range tags {
		fields = append(fields, reflect.StructField{Name: "F" + string(rune('A'+i)), Type: reflect.TypeFor[int](), Tag: tag})
	}
	st := reflect.StructOf(fields)
	v := reflect.New(st)
	for i := range fields {
		v.Elem().Field(i).SetInt(1)
	}
	raw, err := bsonio.Marshal(Registry(), v.Interface())
	require.NoError(t, err)
	elems, err := raw.Elements()
	require.NoError(t, err)
	require.Len(t, elems, len(fields))
	for i, e := range elems {
		got := bsonTag(st.Field(i))
		assert.False(t, got.skip || got.inline, tags[i])
		assert.Equal(t, e.Key(), got.name, "tag %q", tags[i])
	}
	assert.True(t, bsonTag(reflect.StructField{Name: "X", Tag: `bson:"-"`}).skip)
	assert.True(t, bsonTag(reflect.StructField{Name: "X", Tag: `bson:"k,inline"`}).inline)
	assert.Equal(t, structTag{name: "inline", inline: true}, bsonTag(reflect.StructField{Name: "X", Tag: `bson:"inline"`}))
}
