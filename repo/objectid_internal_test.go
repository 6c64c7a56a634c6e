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

// keptID's SetID leaves its _id field alone: it records the ID elsewhere.
type keptID struct {
	mgm.DefaultModel `bson:",inline"`
	Given            any `bson:"-"`
}

func (k *keptID) SetID(id any) { k.Given = id }

// hexID's SetID keeps the ID in another field too.
type hexID struct {
	mgm.DefaultModel `bson:",inline"`
	Hex              string `bson:"hex"`
}

func (h *hexID) SetID(id any) {
	h.DefaultModel.SetID(id)
	h.Hex = id.(primitive.ObjectID).Hex()
}

// panicID's SetID takes no ObjectID.
type panicID struct {
	mgm.DefaultModel `bson:",inline"`
}

func (p *panicID) SetID(id any) { _ = id.(string) }

// intID has an int64 _id.
type intID struct {
	ID int64 `bson:"_id"`
}

func (n *intID) PrepareID(id any) (any, error) { return id, nil }
func (n *intID) GetID() any                    { return n.ID }
func (n *intID) SetID(id any)                  { n.ID = id.(int64) }

// TestObjectIDField: an insert reads and writes the _id field in place of
// GetID and SetID only for a model whose GetID returns that ObjectID
// field, whose SetID sets it and nothing else, and whose encoding leaves a zero one out.
func TestObjectIDField(t *testing.T) {
	field := func(s *model.Schema, err error) *model.Field {
		require.NoError(t, err)
		return objectIDField(s, defaultRegistry)
	}
	assert.NotNil(t, field(model.For[*embedded]()))
	assert.Nil(t, field(model.For[*otherID]()), "GetID reads another field")
	assert.Nil(t, field(model.For[*noOmit]()), "a zero _id is stored")
	assert.Nil(t, field(model.For[*intID]()), "not an ObjectID")
	assert.Nil(t, field(model.For[*keptID]()), "SetID does not set the field")
	assert.Nil(t, field(model.For[*hexID]()), "SetID sets another field too")
	assert.Nil(t, field(model.For[*panicID]()), "SetID panics")
}
