package model_test

import (
	"reflect"
	"testing"

	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type keysBase struct {
	Title string `bson:"title"`
	Views int    `bson:"views"`
}

type keysDTO struct {
	keysBase `bson:",inline"`
	Views    int64 `bson:"views"` // shallower: wins
	Skipped  int   `bson:"-"`
	Plain    bool
	hidden   int
}

// TestKeysOf: a DTO's top-level keys by the driver's rules: tags, lower
// case names, inline structs flattened with the shallower field winning,
// "-" and unexported fields left out, an inline map taking every key.
func TestKeysOf(t *testing.T) {
	keys, all, err := model.KeysOf(reflect.TypeFor[keysDTO]())
	require.NoError(t, err)
	assert.False(t, all)
	assert.Equal(t, []model.Key{{Name: "keysBase.Title", BSON: "title"}, {Name: "Views", BSON: "views"}, {Name: "Plain", BSON: "plain"}}, keys)

	_, all, err = model.KeysOf(reflect.TypeFor[struct {
		Title string         `bson:"title"`
		Rest  map[string]any `bson:",inline"`
	}]())
	require.NoError(t, err)
	assert.True(t, all)
	_, _, err = model.KeysOf(reflect.TypeFor[*keysDTO]())
	require.ErrorIs(t, err, model.ErrUnsupportedType)
	_ = keysDTO{}.hidden
}
