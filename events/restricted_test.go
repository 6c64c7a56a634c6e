package events_test

import (
	"context"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/stretchr/testify/assert"
)

// tagPolicy is a policy of two event types that enforces a tag.
type tagPolicy struct{}

func (tagPolicy) HandleEvent(context.Context, *events.Event) error { return nil }
func (tagPolicy) EnforcesPolicy()                                  {}
func (tagPolicy) EnforcesTags() []string                           { return []string{"tenant"} }
func (tagPolicy) EventTypes() []events.Type {
	return []events.Type{events.BeforeQuery, events.BeforeSave}
}

// TestRestrictedRegistration: On with fewer event types than the listener
// handles marks its registration Restricted (a repository then counts the
// policy as enforcing no tag); On with all of them, or more, does not.
func TestRestrictedRegistration(t *testing.T) {
	for _, c := range []struct {
		name       string
		l          events.Listener
		opts       []events.Option
		restricted bool
	}{
		{"policy", tagPolicy{}, nil, false},
		{"policy on its types", tagPolicy{}, []events.Option{events.On(events.BeforeSave, events.BeforeQuery)}, false},
		{"policy on more types", tagPolicy{}, []events.Option{events.On(events.BeforeSave, events.BeforeQuery, events.AfterLoad)}, false},
		{"policy on some types", tagPolicy{}, []events.Option{events.On(events.BeforeSave)}, true},
		{"policy on other types", tagPolicy{}, []events.Option{events.On(events.AfterLoad, events.AfterSave)}, true},
		{"policy of a model", tagPolicy{}, []events.Option{events.ForModel[*user]()}, false},
		{"listener of every type on one", events.ListenerFunc(func(context.Context, *events.Event) error { return nil }),
			[]events.Option{events.On(events.BeforeSave)}, true},
	} {
		bus := events.NewBus()
		bus.Register(c.l, c.opts...)
		regs := bus.Listeners(userType)
		if assert.Len(t, regs, 1, c.name) {
			assert.Equal(t, c.restricted, regs[0].Restricted, c.name)
		}
	}
}
