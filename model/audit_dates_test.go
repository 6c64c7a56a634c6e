package model_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/kamva/mgm/v3"
	"github.com/mgmevents/mgmevents/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type (
	// twoCreated would store created_at (mgm's) and createdAt (Auditing's).
	twoCreated struct {
		mgm.DefaultModel `bson:",inline"`
		Created          time.Time `bson:"createdAt" audit:"createdAt"`
	}
	twoUpdated struct {
		mgm.DefaultModel `bson:",inline"`
		Updated          *time.Time `bson:"updatedAt" audit:"updatedAt"`
	}
	// shadowCreated stores its own created_at, which hides DefaultModel's.
	shadowCreated struct {
		mgm.DefaultModel `bson:",inline"`
		Created          time.Time `bson:"created_at" audit:"createdAt"`
	}
	// idCreated keeps its own times beside mgm.IDField.
	idCreated struct {
		mgm.IDField `bson:",inline"`
		Created     time.Time `bson:"createdAt" audit:"createdAt"`
		Updated     time.Time `bson:"updatedAt" audit:"updatedAt"`
	}
	// byBeside: the By kinds have no twin in DefaultModel.
	byBeside struct {
		mgm.DefaultModel `bson:",inline"`
		CreatedBy        string `bson:"createdBy" audit:"createdBy"`
	}
)

// TestAuditTimeBesideDefaultModel: an audit:"createdAt" or "updatedAt"
// field beside mgm.DefaultModel, whose created_at and updated_at record
// the same times, is refused with an error that says what to do.
func TestAuditTimeBesideDefaultModel(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[*twoCreated](): "model: type *model_test.twoCreated field Created `audit:\"createdAt\"`: the model embeds mgm.DefaultModel (mgm.DateFields), " +
			"whose CreatedAt (created_at) already records this time, so the document would store it twice: " +
			"drop the field and use DefaultModel's CreatedAt (Auditing fills it), or embed mgm.IDField instead of mgm.DefaultModel to keep Created",
		reflect.TypeFor[*twoUpdated](): "whose UpdatedAt (updated_at) already records this time",
	} {
		_, err := model.Of(typ)
		require.ErrorIs(t, err, model.ErrInvalidTag, "%v", typ)
		assert.Contains(t, err.Error(), want)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[*shadowCreated](), reflect.TypeFor[*idCreated](), reflect.TypeFor[*byBeside]()} {
		_, err := model.Of(typ)
		assert.NoError(t, err, "%v stores one time of each kind", typ)
	}
}
