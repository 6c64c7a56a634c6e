package autokeys

import (
	"context"
	"fmt"
	"reflect"

	"github.com/mgmevents/mgmevents/mql"
)

// The tenant whose sequence numbers an `auto:"inc,scope=tenant"` field.

// tenantOf returns the tenant whose sequence numbers field f of the model
// mv: "" for a field that is not tenant-scoped; else the tenant the
// TenantScope gives for the tenant the model names. It refuses before
// anything is reserved, so that a request without the tenant cannot use up
// that tenant's numbers.
func (k *Keys) tenantOf(ctx context.Context, p *plan, f *fieldPlan, mv reflect.Value) (string, error) {
	if !f.ScopeTenant {
		return "", nil
	}
	tenant, err := k.tenants.TenantOf(ctx, p.schema.Tenant.Value(mv).String())
	if err != nil {
		return "", fmt.Errorf("%v field %s is numbered per tenant: %w", p.schema.Type, f.Name, err)
	}
	return tenant, nil
}

// upsertTenant returns the tenant an upsert's document will belong to,
// for a tenant-scoped field: the tenant the final filter requires, or else
// the current one.
func (k *Keys) upsertTenant(ctx context.Context, p *plan, f *fieldPlan, filter any) (string, error) {
	if !f.ScopeTenant {
		return "", nil
	}
	eqs, err := mql.Equalities(filter)
	if err != nil {
		return "", err
	}
	for _, eq := range eqs {
		if t, ok := eq.Value.(string); ok && eq.Key == p.schema.Tenant.BSON && t != "" {
			return t, nil
		}
	}
	return k.tenantOf(ctx, p, f, reflect.New(p.schema.Struct).Elem())
}
