package repo

import (
	"testing"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

type embedded struct {
	mgm.DefaultModel `bson:",inline"`
	Name             string `bson:"name"`
}

// otherID answers GetID with a field that is not its _id.
type otherID struct {
	mgm.DefaultModel `bson:",inline"`
	Other            primitive.ObjectID `bson:"other"`
}

func (o *otherID) GetID() any { return o.Other }

// noOmit stores a zero _id as such.
type noOmit struct {
	ID primitive.ObjectID `bson:"_id"`
}

func (n *noOmit) PrepareID(id any) (any, error) { return id, nil }
func (n *noOmit) GetID() any                    { return n.ID }
func (n *noOmit) SetID(id any)                  { n.ID = id.(primitive.ObjectID) }

// intID has an int64 _id.
type intID struct {
	ID int64 `bson:"_id"`
}

func (n *intID) PrepareID(id any) (any, error) { return id, nil }
func (n *intID) GetID() any                    { return n.ID }
func (n *intID) SetID(id any)                  { n.ID = id.(int64) }

// TestObjectIDField: an insert reads the _id field in place of GetID only
// for a model whose GetID returns that ObjectID field and whose encoding
// leaves a zero one out.
func TestObjectIDField(t *testing.T) {
	field := func(s *model.Schema, err error) *model.Field {
		require.NoError(t, err)
		return objectIDField(s, defaultRegistry)
	}
	assert.NotNil(t, field(model.For[*embedded]()))
	assert.Nil(t, field(model.For[*otherID]()), "GetID reads another field")
	assert.Nil(t, field(model.For[*noOmit]()), "a zero _id is stored")
	assert.Nil(t, field(model.For[*intID]()), "not an ObjectID")
}
