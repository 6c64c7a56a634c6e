// Package tenancy confines every operation on a model with a policy:"tenant"
// field to the tenant the context acts as. Tenancy is a policy
// (events.Policy): no other listener, option or switch can widen it, and it
// fails closed: with no tenant in the context, every operation is refused.
package tenancy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/mgmevents/mgmevents/events"
	"github.com/mgmevents/mgmevents/listeners/policy"
	"github.com/mgmevents/mgmevents/model"
	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// Errors of the Tenancy policy. An aggregate stage that writes a tenant
// collection, or a collation, gives events.ErrUnguardedQuery.
var (
	// ErrNoTenant: the context names no tenant (and is not AllTenants), so
	// the operation is refused, reads included.
	ErrNoTenant = errors.New("tenancy: no tenant in the context; use tenancy.WithTenant, or tenancy.AllTenants for cross-tenant jobs")
	// ErrTenantMismatch: a model, an update or an upsert names another
	// tenant than the current one, or would change a document's tenant.
	ErrTenantMismatch = errors.New("tenancy: tenant mismatch")
)

// access is how a context may reach tenants' documents: as one tenant, or
// all of them. One key holds it, so the helper called last wins.
type access struct {
	tenant string
	all    bool
}

type accessCtxKey struct{}

// accessKey is the context key of WithTenant and AllTenants.
var accessKey = accessCtxKey{}

// WithTenant returns a context that acts as tenant, replacing any tenant
// or AllTenants before it. An empty tenant is no tenant: operations under
// it get ErrNoTenant.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, accessKey, access{tenant: tenant})
}

// FromContext returns the tenant WithTenant put in ctx.
func FromContext(ctx context.Context) (string, bool) {
	a, _ := ctx.Value(accessKey).(access)
	return a.tenant, a.tenant != "" && !a.all
}

// AllTenants returns a context for explicit cross-tenant access (admin
// jobs, migrations), replacing any tenant before it: filters are not
// confined, and models keep the tenant they name. Inserts and upserts must
// still name a tenant.
func AllTenants(ctx context.Context) context.Context {
	return context.WithValue(ctx, accessKey, access{all: true})
}

func allTenants(ctx context.Context) bool {
	a, _ := ctx.Value(accessKey).(access)
	return a.all
}

// Resolver returns the current tenant from a context; "" means none.
type Resolver func(ctx context.Context) (string, error)

// Option configures Tenancy.
type Option func(*Tenancy)

// WithResolver reads the tenant with r instead of from WithTenant,
// for applications that already keep it in the context (a JWT claim, a
// request header). AllTenants still applies. r is given the context the
// operation runs on.
func WithResolver(r Resolver) Option {
	return func(t *Tenancy) {
		if r != nil {
			t.resolve = r
		}
	}
}

// Tenancy confines every operation on a model with a policy:"tenant" field to
// the current tenant. It is a policy (events.Policy): it runs after every
// other listener on Before* events and even when events are switched off,
// and its Check verifies, after all listeners, policies included, that
// what will be sent is still confined; so nothing but AllTenants widens it.
//
//   - Every filter is ANDed with the tenant (mql.And): reads, counts,
//     Distinct, updates, deletes, replaces, find-and-modify. No user filter
//     can widen a conjunction. A collation other than "simple" is refused
//     (ErrUnguardedQuery): it could make the tenant match another.
//   - Aggregate gets a leading $match on the tenant; a stage of any
//     model's pipeline that reads a tenant collection is confined to the
//     tenant, and one that writes it is refused (ErrUnguardedQuery; see
//     listeners/policy). Watch gets one
//     on the change's full document (fullDocument.<field>), so a change
//     without the full document of a tenant's document is not delivered.
//   - Inserts, Save and Update stamp the tenant on a model that has none; a
//     model naming another tenant gets ErrTenantMismatch and nothing is
//     written. Upserts get it with $setOnInsert.
//   - The tenant is immutable: an update (a BeforeDelete listener's
//     included) that writes the tenant field to anything but the current
//     tenant, an upsert whose filter names another tenant, a document a
//     BeforeSave listener rewrote to another tenant, and a Save, Update or
//     Delete of a model of another tenant get ErrTenantMismatch.
//   - What a listener adds to a write (events.Event's Extra and Tombstone)
//     may not write the tenant field, by a $rename's target either:
//     ErrTenantMismatch.
//   - With no tenant in the context, every operation, reads included, gets
//     ErrNoTenant.
//
// Models without a tenant field are untouched.
type Tenancy struct {
	resolve Resolver
	table   *policy.Table[*model.Field] // the tenant field, per model and per collection
}

// New returns the policy.
func New(opts ...Option) *Tenancy {
	t := &Tenancy{resolve: func(ctx context.Context) (string, error) {
		s, _ := FromContext(ctx)
		return s, nil
	}, table: policy.NewTable(tenantField)}
	for _, o := range opts {
		o(t)
	}
	return t
}

// tenantField returns the model's policy:"tenant" field, which holds the
// tenant a document belongs to: one string field, not the _id, of no
// other tag that sets it (auto, audit), and of no option.
func tenantField(s *model.Schema) (*model.Field, bool, error) {
	fields := s.Policy("tenant")
	if len(fields) == 0 {
		return nil, false, nil
	}
	f := &fields[0]
	reason := ""
	switch {
	case len(fields) > 1:
		f, reason = &fields[1], "a second tenant field (the first is "+fields[0].Name+")"
	case len(f.Options) > 0:
		reason = fmt.Sprintf(`unknown option %q; the tenant field is policy:"tenant"`, f.Options[0])
	case f.Type.Kind() != reflect.String:
		reason = "the tenant field must be a string, not " + f.Type.String()
	case f.BSON == "_id":
		reason = "the tenant cannot be the _id"
	case slices.ContainsFunc(s.Auto, func(a model.AutoField) bool { return a.BSON == f.BSON }),
		slices.ContainsFunc(s.Audit, func(a model.AuditField) bool { return a.BSON == f.BSON }):
		reason = "the tenant field cannot also be an auto or audit field"
	}
	if reason != "" {
		return nil, false, f.Err(s.Type, reason)
	}
	return &f.Field, true, nil
}

// EnforcesPolicy marks Tenancy as an events.Policy.
func (*Tenancy) EnforcesPolicy() {}

// EnforcesTags reports that Tenancy enforces policy:"tenant" fields
// (events.TagEnforcer).
func (*Tenancy) EnforcesTags() []string { return []string{"tenant"} }

// TenantOf returns the tenant that a model naming tenant named ("" for
// none) is written for under ctx: the current tenant, which named must
// match, or under AllTenants named itself, which must then be set.
func (t *Tenancy) TenantOf(ctx context.Context, named string) (string, error) {
	current, all, err := t.Tenant(ctx)
	switch {
	case err != nil:
		return "", err
	case all && named != "":
		return named, nil
	case all:
		return "", fmt.Errorf("%w: under AllTenants the model must name its tenant", ErrNoTenant)
	case named != "" && named != current:
		return "", fmt.Errorf("%w: the model names tenant %q, but the context acts as tenant %q", ErrTenantMismatch, named, current)
	}
	return current, nil
}

// FillsScope reports whether f is the tenant field of the model of s. It
// and ScopeValue let AutoKeys number an `auto:"inc,scope=tenant"` field
// (scope= naming the tenant field) per tenant with the policy's own
// reading of the context (autokeys.WithScopeSource), before Tenancy,
// which runs after it, stamps the tenant.
func (t *Tenancy) FillsScope(s *model.Schema, f *model.Field) bool {
	tf, ok, err := t.table.Model(s.Type)
	return err == nil && ok && tf.BSON == f.BSON
}

// ScopeValue returns, as a value of f's type, the tenant a model of s
// whose tenant field holds named is written for under ctx (see TenantOf).
func (t *Tenancy) ScopeValue(ctx context.Context, _ *model.Schema, f *model.Field, named reflect.Value) (reflect.Value, error) {
	tenant, err := t.TenantOf(ctx, named.String())
	if err != nil {
		return reflect.Value{}, err
	}
	return reflect.ValueOf(tenant).Convert(f.Type), nil
}

// EventTypes tells the bus which events Tenancy handles.
func (*Tenancy) EventTypes() []events.Type {
	return []events.Type{events.BeforeConvert, events.BeforeSave, events.BeforeQuery, events.BeforeUpdate, events.BeforeDelete}
}

// Tenant returns the tenant ctx acts as; all reports AllTenants. With neither, the error wraps ErrNoTenant.
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

// Prepare records the collection of every model a repository is created
// for on the bus, and whether it holds tenants' documents, so that a
// pipeline stage that reaches it from any model is confined.
func (t *Tenancy) Prepare(mt reflect.Type, coll *mongo.Collection) error {
	_, _, err := t.table.Prepare(mt, coll)
	return err
}

// scope returns e's model's tenant field when it has one (nil
// otherwise or on an error), and the tenant ctx acts as. It first
// confines, for a query by a pipeline, the stages that reach collections
// (or checks them, when final: in Check), whatever the model.
func (t *Tenancy) scope(ctx context.Context, e *events.Event, final bool) (*model.Field, string, bool, error) {
	if e.Type == events.BeforeQuery && policy.Pipelined(e) {
		if err := t.reaches(ctx, e, final); err != nil {
			return nil, "", false, err
		}
	}
	f, ok, err := t.table.Model(e.ModelType)
	if err != nil || !ok {
		return nil, "", false, err
	}
	tenant, all, err := t.Tenant(ctx)
	if err != nil {
		return nil, "", false, err
	}
	return f, tenant, all, nil
}

// reaches confines, or when final checks, every stage of e's pipeline
// that reaches a collection of tenants' documents: a read is confined to
// the tenant (unless AllTenants), a write refused.
func (t *Tenancy) reaches(ctx context.Context, e *events.Event, final bool) error {
	return t.table.Confine(e, final, func(r *mql.Reach, f *model.Field) (bson.E, bool, error) {
		tenant, all, err := t.Tenant(ctx)
		switch {
		case err != nil:
			return bson.E{}, false, err
		case r.Writes:
			return bson.E{}, false, fmt.Errorf("%w: a pipeline may not write a collection of tenants' documents: its documents could name any tenant; write them through the collection's repository", events.ErrUnguardedQuery)
		case !all && !simple(e.Collation):
			return bson.E{}, false, fmt.Errorf("%w: collation %q could make the tenant match another tenant's in the stage; use the simple collation", events.ErrUnguardedQuery, e.Collation.Locale)
		}
		return bson.E{Key: f.BSON, Value: tenant}, !all, nil
	})
}

// HandleEvent confines e to the tenant: it ANDs the tenant onto the filter,
// puts a $match first in a pipeline, stamps a model that names no tenant,
// and gives an upsert's new document the tenant. Check then verifies all.
func (t *Tenancy) HandleEvent(ctx context.Context, e *events.Event) error {
	tf, tenant, all, err := t.scope(ctx, e, false)
	if tf == nil || all {
		return err
	}
	f := tf.BSON
	switch e.Type {
	case events.BeforeConvert:
		if fv := tf.Value(reflect.ValueOf(e.Model).Elem()); fv.String() == "" {
			fv.SetString(tenant)
		}
	case events.BeforeQuery:
		if policy.Pipelined(e) { // stages that reach collections are confined above
			e.Pipeline, err = mql.PrependMatch(e.Pipeline, policy.Stored(e, bson.E{Key: f, Value: tenant}))
			return err
		}
		e.Filter = mql.And(e.Filter, bson.E{Key: f, Value: tenant})
	case events.BeforeUpdate:
		if !e.Upsert {
			return nil
		}
		u, err := mql.ParseUpdate(e.Update)
		if err != nil || u.IsPipeline() || u.Touches(f) {
			return err // a pipeline upsert gets the filter's equalities from the server
		}
		if err := u.Add("$setOnInsert", f, tenant); err != nil {
			return err
		}
		e.Update = u.Value()
	}
	return nil
}

// Check verifies, after every listener has run, that e is still confined
// to the tenant; see Tenancy.
func (t *Tenancy) Check(ctx context.Context, e *events.Event) error {
	f, tenant, all, err := t.scope(ctx, e, true)
	if f == nil {
		return err
	}
	if err := policy.RefuseAdded(e, ErrTenantMismatch, "the tenant field", f.BSON); err != nil {
		return err
	}
	switch e.Type {
	case events.BeforeConvert:
		return checkTenant(f, "the "+e.ModelType.String(), f.Value(reflect.ValueOf(e.Model).Elem()).String(), tenant, all)
	case events.BeforeSave:
		if e.Document == nil {
			return nil // the model, checked on BeforeConvert, is written
		}
		v, _ := e.Document.Lookup(f.BSON).StringValueOK()
		return checkTenant(f, "the document to write", v, tenant, all)
	case events.BeforeQuery:
		if e.Model != nil { // Save, Update, Delete of a model
			v := f.Value(reflect.ValueOf(e.Model).Elem()).String()
			if v != "" && !all && v != tenant {
				return fmt.Errorf("%w: the %v names tenant %q, but the context acts as tenant %q", ErrTenantMismatch, e.ModelType, v, tenant)
			}
		}
		if all {
			return nil
		}
		return checkConfined(e, f.BSON, tenant)
	case events.BeforeUpdate:
		return checkTenantUpdate(e.Update, e.Upsert, f.BSON, tenant, all)
	case events.BeforeDelete:
		if e.Update != nil {
			return checkTenantUpdate(e.Update, false, f.BSON, tenant, all)
		}
	}
	return nil
}

// checkTenant checks the tenant a model or document names.
func checkTenant(f *model.Field, what, have, tenant string, all bool) error {
	switch {
	case all && have == "":
		return fmt.Errorf("%w: under AllTenants %s must name its tenant in field %s", ErrNoTenant, what, f.Name)
	case !all && have != tenant:
		return fmt.Errorf("%w: %s names tenant %q, but the context acts as tenant %q", ErrTenantMismatch, what, have, tenant)
	}
	return nil
}

// checkConfined verifies that the filter or pipeline e sends requires the
// tenant, that no collation can widen it, and that an upsert's filter asks
// for no other tenant's document.
func checkConfined(e *events.Event, field, tenant string) error {
	if c := e.Collation; !simple(c) {
		return fmt.Errorf("%w: collation %q could make the tenant match another tenant's; use the simple collation", events.ErrUnguardedQuery, c.Locale)
	}
	cond := bson.E{Key: field, Value: tenant}
	if policy.Pipelined(e) { // its stages that reach collections are checked in Check
		ok, err := mql.LeadingMatchRequires(e.Pipeline, policy.Stored(e, cond))
		if err == nil && !ok {
			err = fmt.Errorf("%w: a listener removed the tenant's $match from the pipeline", ErrTenantMismatch)
		}
		return err
	}
	ok, err := mql.Requires(e.Filter, cond)
	if err == nil && !ok {
		err = fmt.Errorf("%w: a listener removed the tenant condition from the filter", ErrTenantMismatch)
	}
	if err != nil || !e.Upsert {
		return err
	}
	eqs, err := mql.Equalities(e.Filter)
	if err != nil {
		return err
	}
	for _, eq := range eqs {
		if eq.Key == field && eq.Value != tenant {
			return fmt.Errorf("%w: the upsert's filter names tenant %q, but the context acts as tenant %q", ErrTenantMismatch, fmt.Sprint(eq.Value), tenant)
		}
	}
	return nil
}

// checkTenantUpdate refuses an update that would change a document's
// tenant, and an upsert whose new document would not get the tenant.
func checkTenantUpdate(update any, upsert bool, field, tenant string, all bool) error {
	u, err := mql.ParseUpdate(update)
	if err != nil {
		return err
	}
	if u.IsPipeline() {
		if !all && u.Touches(field) {
			return fmt.Errorf("%w: an update pipeline may not write the tenant field %q of tenant %q's documents", ErrTenantMismatch, field, tenant)
		}
		if all && upsert {
			return fmt.Errorf("%w: under AllTenants an upsert pipeline cannot be checked to set the tenant field %q", ErrNoTenant, field)
		}
		return nil // an upsert's document gets the filter's tenant from the server
	}
	stamped := false
	for _, op := range u.Operators() {
		fields, err := mql.ToD(op.Value)
		if err != nil {
			return err
		}
		for _, kv := range fields {
			to, _ := mql.RenameTarget(kv.Value)
			if !mql.PathsOverlap(kv.Key, field) && (op.Key != "$rename" || !mql.PathsOverlap(to, field)) {
				continue
			}
			same := (op.Key == "$set" || op.Key == "$setOnInsert") && kv.Key == field
			v, isString := kv.Value.(string)
			switch {
			case all && same && isString && v != "":
				stamped = true
			case all:
			case same && isString && v == tenant:
				stamped = true
			default:
				return fmt.Errorf("%w: %s of the tenant field %q: the documents of tenant %q, which the context acts as, keep their tenant", ErrTenantMismatch, op.Key, field, tenant)
			}
		}
	}
	switch {
	case !upsert || stamped:
		return nil
	case all:
		return fmt.Errorf("%w: under AllTenants an upsert must set the tenant field %q", ErrNoTenant, field)
	}
	return fmt.Errorf("%w: a listener removed the tenant from the upsert's $setOnInsert", ErrTenantMismatch)
}

// simple reports whether c compares strings by their bytes, as the tenant
// condition needs.
func simple(c *options.Collation) bool { return c == nil || c.Locale == "" || c.Locale == "simple" }
