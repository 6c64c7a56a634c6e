package policytest_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/encryption"
	"github.com/mgmevents/mgmevents/listeners/softdelete"
	"github.com/mgmevents/mgmevents/listeners/tenancy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
)

// path is a field name of its own type, which the driver encodes as a
// string.
type path string

// TestDefendAddedWritesOfPolicyFields: each policy's Check, on its own
// and whatever the repository does after it, refuses a listener's Extra or
// Tombstone that writes a field the policy governs: by the operator's
// field, or by a $rename's source or target, of any Go type that encodes
// as a string. What writes other fields passes.
func TestDefendAddedWritesOfPolicyFields(t *testing.T) {
	enc, err := encryption.New(encryption.Keys{{ID: "k1", Secret: secret(t)}})
	require.NoError(t, err)
	policies := []struct {
		name    string
		check   events.Checker
		fields  []string
		refusal error
	}{
		{"tenancy", tenancy.New(), []string{"tenant"}, tenancy.ErrTenantMismatch},
		{"softdelete", softdelete.New(), []string{"deletedAt"}, events.ErrUnguardedQuery},
		{"encryption", enc, []string{"email", "email_bidx"}, encryption.ErrEncryptedField},
	}
	// HardDelete, so that soft delete's Check of a delete looks at the
	// additions only.
	ctx := softdelete.HardDelete(tenancy.WithTenant(context.Background(), acme))
	event := func(typ events.Type, add func(e *events.Event)) *events.Event {
		e := &events.Event{Type: typ, Op: events.OpUpdateOne, Collection: "customers", ModelType: reflect.TypeFor[*Customer]()}
		if typ == events.BeforeUpdate {
			e.Filter = bson.D{{Key: "tenant", Value: acme}}
			e.Update = bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}
		} else {
			e.Op = events.OpDelete
		}
		add(e)
		return e
	}
	for _, p := range policies {
		for _, field := range p.fields {
			for name, add := range map[string]func(e *events.Event){
				"Extra $set":               func(e *events.Event) { e.AddExtra("$set", field, "v") },
				"Extra $unset":             func(e *events.Event) { e.AddExtra("$unset", field, "") },
				"Extra $rename to":         func(e *events.Event) { e.AddExtra("$rename", "_x", field) },
				"Extra $rename to a part":  func(e *events.Event) { e.AddExtra("$rename", "_x", field+".y") },
				"Extra $rename from":       func(e *events.Event) { e.AddExtra("$rename", field, "_x") },
				"Extra $rename named type": func(e *events.Event) { e.AddExtra("$rename", "_x", path(field)) },
				"Tombstone $rename to":     func(e *events.Event) { e.AddTombstone("$rename", "_x", field) },
				"Tombstone $set":           func(e *events.Event) { e.AddTombstone("$set", field, "v") },
			} {
				for _, typ := range []events.Type{events.BeforeUpdate, events.BeforeDelete} {
					if typ != events.BeforeDelete && strings.HasPrefix(name, "Tombstone") {
						continue // only a delete takes a tombstone
					}
					err := p.check.Check(ctx, event(typ, add))
					assert.ErrorIs(t, err, p.refusal, "%s: %s %s on %v", p.name, name, field, typ)
					assert.ErrorContains(t, err, fmt.Sprintf("%q", field), p.name)
				}
			}
		}
		for _, typ := range []events.Type{events.BeforeUpdate, events.BeforeDelete} {
			err := p.check.Check(ctx, event(typ, func(e *events.Event) {
				e.AddExtra("$rename", "_x", "_y")
				e.AddTombstone("$set", "_gone", true)
			}))
			assert.NoError(t, err, "%s: additions of other fields on %v", p.name, typ)
			err = p.check.Check(ctx, event(typ, func(e *events.Event) { e.AddExtra("$set", "_x", make(chan int)) }))
			assert.ErrorIs(t, err, events.ErrUnguardedQuery, "%s: an addition that cannot be read", p.name)
		}
	}
}
