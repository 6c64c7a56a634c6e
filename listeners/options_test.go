package listeners_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/mgmevents/mgmevents/listeners"
	"github.com/mgmevents/mgmevents/listeners/autokeys"
	"github.com/stretchr/testify/assert"
)

// TestOptionsAreTypedPerConstructor: each option has the type of the one
// constructor that applies it, and no other constructor takes that type,
// so that NewAuditing(autokeys.WithoutIndexes()) or a Logging option given
// to Auditing does not compile.
func TestOptionsAreTypedPerConstructor(t *testing.T) {
	takes := map[string]reflect.Type{ // constructor -> the type of its options
		"autokeys.New":          reflect.TypeOf(autokeys.New).In(1).Elem(),
		"listeners.NewAuditing": reflect.TypeOf(listeners.NewAuditing).In(0).Elem(),
		"listeners.NewLogging":  reflect.TypeOf(listeners.NewLogging).In(1).Elem(),
	}
	options := map[string]struct {
		option any
		by     string
	}{
		"autokeys.WithoutIndexes":      {autokeys.WithoutIndexes(), "autokeys.New"},
		"autokeys.WithLogger":          {autokeys.WithLogger(nil), "autokeys.New"},
		"autokeys.WithClock":           {autokeys.WithClock(time.Now), "autokeys.New"},
		"autokeys.WithScopeSource":     {autokeys.WithScopeSource(nil), "autokeys.New"},
		"autokeys.WithSequenceOptions": {autokeys.WithSequenceOptions(), "autokeys.New"},
		"autokeys.WithAllocator":       {autokeys.WithAllocator(nil), "autokeys.New"},
		"listeners.WithClock":          {listeners.WithClock(time.Now), "listeners.NewAuditing"},
		"listeners.WithAuditor":        {listeners.WithAuditor(nil), "listeners.NewAuditing"},
		"listeners.WithLevel":          {listeners.WithLevel(nil), "listeners.NewLogging"},
		"listeners.WithSlow":           {listeners.WithSlow(0), "listeners.NewLogging"},
		"listeners.WithDocuments":      {listeners.WithDocuments(), "listeners.NewLogging"},
	}
	for name, o := range options {
		ot := reflect.TypeOf(o.option)
		for ctor, want := range takes {
			assert.Equal(t, ctor == o.by, ot.AssignableTo(want), "%s given to %s", name, ctor)
		}
	}
}
