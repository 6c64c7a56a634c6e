// Package autokeys fills a model's `auto:"inc"` and `auto:"uuid"` fields
// before it is written: numbers from a sequence (taken in blocks, so an
// insert rarely waits for the counter), order numbers built from them, and
// UUIDs. Register the listener New returns on the events.Bus the
// repositories use; see docs/keys.md for the tag grammar and the
// guarantees.
//
// The package knows no policy. A scope field that a policy sets, such as
// the tenant field of `auto:"inc,scope=tenant"`, takes its value from a
// ScopeSource (WithScopeSource), which the tenancy policy implements.
package autokeys
