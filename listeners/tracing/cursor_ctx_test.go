package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// requestCtx is an application's request context passed by value; its
// map makes its type one that == cannot compare.
type requestCtx struct {
	context.Context
	attrs map[string]string
}

// TestCursorOnContextOfAnyType: a Cursor publishes its documents' events on
// the context its Next is given, outside the operation's span, where
// Tracing returns that context unchanged; the documents decode, whatever
// the context's type.
func TestCursorOnContextOfAnyType(t *testing.T) {
	g := newRig(t, false)
	require.NoError(t, g.accounts.Insert(ctx, &Account{Email: "ann@example.com"}))
	rctx := requestCtx{Context: ctx, attrs: map[string]string{"request": "1"}}
	cur, err := g.accounts.Iter(rctx, bson.D{})
	require.NoError(t, err)
	defer cur.Close(rctx)
	var emails []string
	for cur.Next(rctx) {
		emails = append(emails, cur.Model().Email)
	}
	require.NoError(t, cur.Err())
	assert.Equal(t, []string{"ann@example.com"}, emails)
}
