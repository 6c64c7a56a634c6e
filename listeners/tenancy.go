package listeners

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/model"
	"go.mongodb.org/mongo-driver/bson"
)

// Errors of the Tenancy policy.
var (
	// ErrNoTenant: the context names no tenant (and is not AllTenants), so
	// the operation is refused, reads included.
	ErrNoTenant = errors.New("listeners: no tenant in the context; use listeners.WithTenant, or AllTenants for cross-tenant jobs")
	// ErrTenantMismatch: a model, an update or an upsert names another
	// tenant than the current one, or would change a document's tenant.
	ErrTenantMismatch = errors.New("listeners: tenant mismatch")
	// ErrUnguardedStage: an Aggregate stage reads or writes another
	// collection ($lookup, $graphLookup, $unionWith, $out, $merge), which
	// the tenant condition cannot reach.
	ErrUnguardedStage = errors.New("listeners: aggregate stage not confined to the tenant")
)

type tenantKey struct{}
type allTenantsKey struct{}

// WithTenant returns a context that acts as tenant. An empty tenant is no
// tenant: operations under it get ErrNoTenant.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant WithTenant put in ctx.
func TenantFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok && t != ""
}

// AllTenants returns a context for explicit cross-tenant access (admin
// jobs, migrations): filters are not confined, and models keep the tenant
// they name. Inserts and upserts must still name a tenant.
func AllTenants(ctx context.Context) context.Context {
	return context.WithValue(ctx, allTenantsKey{}, true)
}

func allTenants(ctx context.Context) bool { return ctx.Value(allTenantsKey{}) != nil }

// TenantResolver returns the current tenant from a context; "" means none.
type TenantResolver func(ctx context.Context) (string, error)

// TenancyOption configures Tenancy.
type TenancyOption func(*Tenancy)

// WithTenantResolver reads the tenant with r instead of from WithTenant,
// for applications that already keep it in the context (a JWT claim, a
// request header). AllTenants still applies.
func WithTenantResolver(r TenantResolver) TenancyOption {
	return func(t *Tenancy) {
		if r != nil {
			t.resolve = r
		}
	}
}

// Tenancy confines every operation on a model with a tenant:"id" field to
// the current tenant. It is a policy (events.Policy): it runs after every
// other listener on Before* events and even when events are switched off,
// so nothing but AllTenants widens it.
//
//   - Every filter is ANDed with the tenant (events.And): reads, counts,
//     Distinct, updates, deletes, replaces, find-and-modify. No user filter
//     can widen a conjunction.
//   - Aggregate gets a leading $match on the tenant; a stage that reaches
//     another collection is refused with ErrUnguardedStage.
//   - Inserts, Save and Update stamp the tenant on a model that has none; a
//     model naming another tenant gets ErrTenantMismatch and nothing is
//     written. Upserts get it with $setOnInsert.
//   - The tenant is immutable: an update that writes the tenant field to
//     anything but the current tenant, an upsert whose filter names another
//     tenant, and a Save, Update or Delete of a model of another tenant get
//     ErrTenantMismatch.
//   - With no tenant in the context, every operation, reads included, gets
//     ErrNoTenant.
//
// Models without a tenant field are untouched.
type Tenancy struct {
	resolve TenantResolver
}

// NewTenancy returns the policy.
func NewTenancy(opts ...TenancyOption) *Tenancy {
	t := &Tenancy{resolve: func(ctx context.Context) (string, error) {
		s, _ := TenantFrom(ctx)
		return s, nil
	}}
	for _, o := range opts {
		o(t)
	}
	return t
}

// EnforcesPolicy marks Tenancy as an events.Policy.
func (*Tenancy) EnforcesPolicy() {}

// EventTypes tells the bus which events Tenancy handles.
func (*Tenancy) EventTypes() []events.Type {
	return []events.Type{events.BeforeConvert, events.BeforeQuery, events.BeforeUpdate}
}

// Tenant returns the tenant ctx acts as; all reports AllTenants. With
// neither, the error wraps ErrNoTenant.
func (t *Tenancy) Tenant(ctx context.Context) (tenant string, all bool, err error) {
	if allTenants(ctx) {
		return "", true, nil
	}
	tenant, err = t.resolve(ctx)
	if err != nil {
		return "", false, fmt.Errorf("%w: resolving the tenant: %w", ErrNoTenant, err)
	}
	if tenant == "" {
		return "", false, ErrNoTenant
	}
	return tenant, false, nil
}

// HandleEvent applies the policy to e.
func (t *Tenancy) HandleEvent(ctx context.Context, e *events.Event) error {
	s, err := model.Of(e.ModelType)
	if err != nil || s.Tenant == nil {
		return err
	}
	tenant, all, err := t.Tenant(ctx)
	if err != nil {
		return err
	}
	f := s.Tenant
	switch e.Type {
	case events.BeforeConvert:
		return stampTenant(s, e.Model, tenant, all)
	case events.BeforeQuery:
		if err := checkModelTenant(s, e.Model, tenant, all); err != nil {
			return err
		}
		if all {
			return nil
		}
		if e.Op == events.OpAggregate {
			return confinePipeline(e, f.BSON, tenant)
		}
		if e.Upsert {
			if err := checkUpsertFilter(e.Filter, f.BSON, tenant); err != nil {
				return err
			}
		}
		e.Filter = events.And(e.Filter, bson.E{Key: f.BSON, Value: tenant})
	case events.BeforeUpdate:
		return checkTenantUpdate(e, f.BSON, tenant, all)
	}
	return nil
}

// stampTenant gives a model being written the current tenant, or checks
// the one it names.
func stampTenant(s *model.Schema, m any, tenant string, all bool) error {
	if m == nil {
		return nil
	}
	fv := s.Tenant.Value(reflect.ValueOf(m).Elem())
	switch have := fv.String(); {
	case all && have == "":
		return fmt.Errorf("%w: under AllTenants a %v must name its tenant in field %s", ErrNoTenant, s.Type, s.Tenant.Name)
	case all || have == tenant:
	case have == "":
		fv.SetString(tenant)
	default:
		return fmt.Errorf("%w: the %v names tenant %q, not the current one", ErrTenantMismatch, s.Type, have)
	}
	return nil
}

// checkModelTenant refuses a Save, Update or Delete of a model that names
// another tenant.
func checkModelTenant(s *model.Schema, m any, tenant string, all bool) error {
	if m == nil || all {
		return nil
	}
	have := s.Tenant.Value(reflect.ValueOf(m).Elem()).String()
	if have != "" && have != tenant {
		return fmt.Errorf("%w: the %v names tenant %q, not the current one", ErrTenantMismatch, s.Type, have)
	}
	return nil
}

// checkUpsertFilter refuses an upsert whose filter asks for another
// tenant's document, which it would otherwise try to create.
func checkUpsertFilter(filter any, field, tenant string) error {
	eqs, err := events.Equalities(filter)
	if err != nil {
		return err
	}
	for _, eq := range eqs {
		if eq.Key == field && eq.Value != tenant {
			return fmt.Errorf("%w: the upsert's filter names tenant %v", ErrTenantMismatch, eq.Value)
		}
	}
	return nil
}

// checkTenantUpdate refuses an update that would change a document's
// tenant, and makes sure an upsert's new document gets the tenant.
func checkTenantUpdate(e *events.Event, field, tenant string, all bool) error {
	u, err := events.ParseUpdate(e.Update)
	if err != nil {
		return err
	}
	if u.IsPipeline() {
		if !all && u.Touches(field) {
			return fmt.Errorf("%w: an update pipeline may not write the tenant field %q", ErrTenantMismatch, field)
		}
		return nil
	}
	stamped := false
	for _, op := range u.Operators() {
		fields, err := events.ToD(op.Value)
		if err != nil {
			return err
		}
		for _, kv := range fields {
			target := kv.Key
			if op.Key == "$rename" {
				to, _ := kv.Value.(string)
				if !events.PathsOverlap(kv.Key, field) && !events.PathsOverlap(to, field) {
					continue
				}
			} else if !events.PathsOverlap(target, field) {
				continue
			}
			same := (op.Key == "$set" || op.Key == "$setOnInsert") && target == field
			if all {
				if same {
					v, _ := kv.Value.(string)
					stamped = stamped || v != ""
				}
				continue
			}
			if !same || kv.Value != tenant {
				return fmt.Errorf("%w: %s of the tenant field %q", ErrTenantMismatch, op.Key, field)
			}
			stamped = true
		}
	}
	if !e.Upsert || stamped {
		return nil
	}
	if all {
		return fmt.Errorf("%w: under AllTenants an upsert must set the tenant field %q", ErrNoTenant, field)
	}
	if err := u.Add("$setOnInsert", field, tenant); err != nil {
		return err
	}
	e.Update = u.Value()
	return nil
}

// unguarded are the stages that read or write another collection.
var unguarded = []string{"$lookup", "$graphLookup", "$unionWith", "$out", "$merge"}

// confinePipeline refuses stages the tenant condition cannot reach,
// anywhere in the pipeline ($facet and $lookup sub-pipelines included), and
// puts a $match on the tenant first.
func confinePipeline(e *events.Event, field, tenant string) error {
	st, err := events.Stages(e.Pipeline)
	if err != nil {
		return err
	}
	if stage := findKey(st, unguarded, 0); stage != "" {
		return fmt.Errorf("%w: %s reaches another collection; run it under AllTenants if it is meant to", ErrUnguardedStage, stage)
	}
	e.Pipeline = append([]bson.D{{{Key: "$match", Value: bson.D{{Key: field, Value: tenant}}}}}, st...)
	return nil
}

// findKey returns the first key of keys found anywhere in v.
func findKey(v any, keys []string, depth int) string {
	if depth > 64 {
		return "(nesting deeper than 64)"
	}
	switch x := v.(type) {
	case bson.D:
		for _, el := range x {
			for _, k := range keys {
				if el.Key == k {
					return k
				}
			}
			if k := findKey(el.Value, keys, depth+1); k != "" {
				return k
			}
		}
		return ""
	case bson.Raw:
		d, err := events.ToD(x)
		if err != nil {
			return "(unreadable stage)"
		}
		return findKey(d, keys, depth+1)
	case string, int, int32, int64, float64, bool, nil:
		return ""
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if _, isBytes := v.([]byte); isBytes {
			return ""
		}
		for i := range rv.Len() {
			if k := findKey(rv.Index(i).Interface(), keys, depth+1); k != "" {
				return k
			}
		}
		return ""
	case reflect.Map, reflect.Struct, reflect.Pointer:
		d, err := events.ToD(v)
		if err != nil {
			return ""
		}
		return findKey(d, keys, depth+1)
	}
	return ""
}
