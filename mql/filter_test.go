package mql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/events/lifecycle"
	"github.com/mgmevents/mgmevents/mql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
)

func TestAndEveryShape(t *testing.T) {
	cond := bson.E{Key: "tenant", Value: "acme"}
	only := bson.D{cond}
	for name, empty := range map[string]any{"nil": nil, "D": bson.D{}, "M": bson.M{}, "map": map[string]any{}, "Raw": mustRaw(t, bson.D{})} {
		assert.Equal(t, only, mql.And(empty, cond), "an empty %s filter gives the condition alone", name)
	}
	type byName struct {
		Name string `bson:"name"`
	}
	for name, f := range map[string]any{
		"D naming the field": bson.D{{Key: "tenant", Value: "globex"}, {Key: "name", Value: "x"}},
		"M naming the field": bson.M{"tenant": bson.M{"$ne": "acme"}},
		"struct":             byName{"x"},
		"Raw":                mustRaw(t, bson.D{{Key: "name", Value: "globex"}}),
	} {
		got := mql.And(f, cond)
		require.Len(t, got, 1, name)
		assert.Equal(t, "$and", got[0].Key, name)
		assert.Equal(t, bson.A{f, only}, got[0].Value, "%s: the filter is kept whole inside the conjunction", name)
	}
	for name, f := range map[string]any{
		"D": bson.D{{Key: "name", Value: "x"}, {Key: "$or", Value: bson.A{bson.M{"tenant": "globex"}}}},
		"M": bson.M{"name": "x", "$or": bson.A{bson.M{"tenant": "globex"}}},
	} {
		got := mql.And(f, cond)
		assert.Equal(t, bson.D{{Key: "$or", Value: bson.A{bson.M{"tenant": "globex"}}}, {Key: "name", Value: "x"}, cond}[2], got[len(got)-1], name)
		assert.Len(t, got, 3, "%s: flat, the condition beside the filter's own", name)
		ok, err := mql.Requires(got, cond)
		require.NoError(t, err)
		assert.True(t, ok, name)
	}
	d := bson.D{{Key: "name", Value: "x"}}
	got := mql.And(d, cond)
	assert.Equal(t, bson.D{{Key: "name", Value: "x"}, cond}, got)
	assert.Equal(t, bson.D{{Key: "name", Value: "x"}}, d, "the caller's filter is not changed")
	got[0].Value = "changed"
	assert.Equal(t, "x", d[0].Value, "nor shared")
}

func mustRaw(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(d)
	require.NoError(t, err)
	return raw
}

func TestEqualities(t *testing.T) {
	filter := bson.D{
		{Key: "a", Value: 1},
		{Key: "b", Value: bson.M{"$eq": "two"}},
		{Key: "c", Value: bson.M{"$gt": 3}},
		{Key: "d", Value: primitive.Regex{Pattern: "^x"}},
		{Key: "e", Value: bson.D{{Key: "nested", Value: true}}},
		{Key: "$or", Value: bson.A{bson.D{{Key: "f", Value: 1}}}},
		{Key: "$and", Value: bson.A{
			bson.M{"g": "seven"},
			bson.D{{Key: "$and", Value: []bson.D{{{Key: "h", Value: 8}}}}},
		}},
	}
	got, err := mql.Equalities(filter)
	require.NoError(t, err)
	assert.Equal(t, bson.D{
		{Key: "a", Value: 1},
		{Key: "b", Value: "two"},
		{Key: "e", Value: bson.D{{Key: "nested", Value: true}}},
		{Key: "g", Value: "seven"},
		{Key: "h", Value: 8},
	}, got)

	got, err = mql.Equalities(mql.And(bson.M{"tenant": "globex"}, bson.E{Key: "tenant", Value: "acme"}))
	require.NoError(t, err)
	assert.Equal(t, bson.D{{Key: "tenant", Value: "globex"}, {Key: "tenant", Value: "acme"}}, got, "a path matched twice appears twice")

	_, err = mql.Equalities(bson.D{{Key: "$and", Value: "not an array"}})
	assert.ErrorIs(t, err, mql.ErrBadDocument)
}

func TestStages(t *testing.T) {
	for name, p := range map[string]any{
		"mongo.Pipeline": mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "a", Value: 1}}}}},
		"[]bson.M":       []bson.M{{"$match": bson.M{"a": 1}}},
		"bson.A":         bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 1}}}}},
	} {
		st, err := mql.Stages(p)
		require.NoError(t, err, name)
		require.Len(t, st, 1, name)
		assert.Equal(t, "$match", st[0][0].Key, name)
	}
	st, err := mql.Stages(nil)
	require.NoError(t, err)
	assert.Empty(t, st)
	_, err = mql.Stages(bson.D{{Key: "$match", Value: 1}})
	assert.ErrorIs(t, err, mql.ErrBadDocument, "a document is not a pipeline")
}

func TestParseUpdate(t *testing.T) {
	for name, bad := range map[string]any{
		"nil":         nil,
		"empty":       bson.D{},
		"replacement": bson.M{"name": "x"},
		"mixed":       bson.D{{Key: "$set", Value: bson.D{}}, {Key: "name", Value: "x"}},
		"empty pipe":  mongo.Pipeline{},
	} {
		_, err := mql.ParseUpdate(bad)
		assert.ErrorIs(t, err, mql.ErrBadDocument, name)
	}

	set := bson.D{{Key: "name", Value: "x"}}
	orig := bson.D{{Key: "$set", Value: set}, {Key: "$inc", Value: bson.M{"n": 1}}, {Key: "$rename", Value: bson.D{{Key: "old", Value: "moved.to"}}}}
	u, err := mql.ParseUpdate(orig)
	require.NoError(t, err)
	assert.False(t, u.IsPipeline())
	for _, path := range []string{"name", "name.first", "n", "old", "moved", "moved.to.x"} {
		assert.True(t, u.Touches(path), path)
	}
	for _, path := range []string{"nam", "names", "other", "movedto"} {
		assert.False(t, u.Touches(path), path)
	}
	require.NoError(t, u.Add("$set", "updatedAt", 1))
	require.NoError(t, u.Add("$setOnInsert", "createdAt", 2))
	assert.Equal(t, bson.D{
		{Key: "$set", Value: bson.D{{Key: "name", Value: "x"}, {Key: "updatedAt", Value: 1}}},
		{Key: "$inc", Value: bson.M{"n": 1}},
		{Key: "$rename", Value: bson.D{{Key: "old", Value: "moved.to"}}},
		{Key: "$setOnInsert", Value: bson.D{{Key: "createdAt", Value: 2}}},
	}, u.Value())
	assert.Equal(t, bson.D{{Key: "name", Value: "x"}}, set, "the caller's $set is not changed")
	assert.Len(t, orig, 3, "the caller's update is not changed")

	p, err := mql.ParseUpdate(mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "a", Value: "$b"}}}}, {{Key: "$unset", Value: "c"}}})
	require.NoError(t, err)
	assert.True(t, p.IsPipeline())
	assert.True(t, p.Touches("a"))
	assert.True(t, p.Touches("c.d"))
	assert.False(t, p.Touches("b"))
	require.NoError(t, p.Add("$set", "at", "$notAFieldPath"))
	require.NoError(t, p.Add("$inc", "v", 1))
	require.ErrorIs(t, p.Add("$push", "x", 1), mql.ErrBadDocument)
	st := p.Value().([]bson.D)
	require.Len(t, st, 4)
	assert.Equal(t, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: bson.D{{Key: "$literal", Value: "$notAFieldPath"}}}}}}, st[2],
		"values go into a pipeline as literals")
}

func TestNewEventsAreBeforeOrAfter(t *testing.T) {
	assert.True(t, events.BeforeQuery.Before())
	assert.True(t, events.BeforeUpdate.Before())
	assert.False(t, events.AfterUpdate.Before())
	assert.Equal(t, "BeforeQuery", events.BeforeQuery.String())
	assert.Equal(t, "AfterUpdate", events.AfterUpdate.String())
	assert.Equal(t, "FindOneAndUpdate", events.OpFindOneAndUpdate.String())
	assert.True(t, events.OpUpdateMany.OperatorUpdate())
	assert.False(t, events.OpUpdate.OperatorUpdate(), "Update by model writes a model")
	assert.False(t, events.OpUpdateMany.Write())

	var got []events.Type
	type l struct{ lifecycle.Base }
	bus := events.NewBus()
	bus.Register(events.ListenerFunc(func(_ context.Context, e *events.Event) error {
		got = append(got, e.Type)
		return nil
	}), events.On(events.BeforeQuery, events.AfterUpdate))
	for _, ty := range []events.Type{events.BeforeQuery, events.BeforeUpdate, events.AfterUpdate} {
		require.NoError(t, bus.Publish(context.Background(), &events.Event{Type: ty}))
	}
	assert.Equal(t, []events.Type{events.BeforeQuery, events.AfterUpdate}, got, "On filters the new types too")
	lc := lifecycle.Adapt(l{})
	assert.NoError(t, lc.HandleEvent(context.Background(), &events.Event{Type: events.BeforeUpdate}))

	unmatched := events.NewBus()
	unmatched.Register(events.ListenerFunc(func(context.Context, *events.Event) error { return nil }), events.On(events.BeforeSave))
	e := &events.Event{Type: events.BeforeQuery, Filter: bson.D{}}
	allocs := testing.AllocsPerRun(100, func() { _ = unmatched.Publish(context.Background(), e) })
	assert.Zero(t, allocs, "an unmatched BeforeQuery allocates nothing")
}

// TestErrorsNameThePackage: every exported function's error starts with
// the package's name, once, and wraps ErrBadDocument.
func TestErrorsNameThePackage(t *testing.T) {
	u, err := mql.ParseUpdate(bson.D{{Key: "$set", Value: 1}})
	require.NoError(t, err)
	pipe, err := mql.ParseUpdate(bson.A{bson.D{{Key: "$set", Value: bson.D{}}}})
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"ToD":                  func() error { _, err := mql.ToD(bson.A{1}); return err },
		"Equalities":           func() error { _, err := mql.Equalities(bson.D{{Key: "$and", Value: 1}}); return err },
		"Requires":             func() error { _, err := mql.Requires([]int{1}, bson.E{Key: "a"}); return err },
		"Stages":               func() error { _, err := mql.Stages(bson.A{1}); return err },
		"PrependMatch":         func() error { _, err := mql.PrependMatch(bson.D{}, bson.E{Key: "a"}); return err },
		"LeadingMatchRequires": func() error { _, err := mql.LeadingMatchRequires(bson.A{1}, bson.E{Key: "a"}); return err },
		"ParseUpdate":          func() error { _, err := mql.ParseUpdate(bson.D{{Key: "name", Value: 1}}); return err },
		"ParseUpdate(nil)":     func() error { _, err := mql.ParseUpdate(nil); return err },
		"CheckOperators":       func() error { return mql.CheckOperators(nil) },
		"Update.Operator":      func() error { _, _, err := u.Operator("$set"); return err },
		"Update.Add":           func() error { return pipe.Add("$push", "a", 1) },
		"Array":                func() error { _, err := mql.Array("x"); return err },
	} {
		err := call()
		require.ErrorIs(t, err, mql.ErrBadDocument, name)
		assert.True(t, strings.HasPrefix(err.Error(), "mql: ") && !strings.HasPrefix(err.Error(), "mql: mql: "), "%s: %v", name, err)
	}
}
