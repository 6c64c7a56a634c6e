package repo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// TestCarryOptions: every option the caller set that the sent operation
// has too is carried over, the last one set winning; others are left.
func TestCarryOptions(t *testing.T) {
	c := &options.Collation{Locale: "fr"}
	u := markOptions([]*options.FindOneAndDeleteOptions{
		options.FindOneAndDelete().SetSort("first").SetComment("first"),
		nil,
		options.FindOneAndDelete().SetSort("last").SetCollation(c).SetProjection("p").SetHint("h").SetComment("x"),
	})
	assert.Equal(t, "last", u.Sort)
	assert.Same(t, c, u.Collation)
	assert.Equal(t, "p", u.Projection)
	assert.Equal(t, "h", u.Hint)
	assert.Equal(t, "x", u.Comment)
	assert.Equal(t, options.After, *u.ReturnDocument, "kept from the destination")

	r := updateOptions([]*options.ReplaceOptions{options.Replace().SetUpsert(true).SetBypassDocumentValidation(true).SetLet("l")})
	assert.True(t, *r.Upsert)
	assert.True(t, *r.BypassDocumentValidation)
	assert.Equal(t, "l", r.Let)
	f := findOneAndUpdateOptions([]*options.FindOneAndReplaceOptions{options.FindOneAndReplace().SetReturnDocument(options.After).SetUpsert(true)})
	assert.Equal(t, options.After, *f.ReturnDocument)
	assert.True(t, *f.Upsert)
}
