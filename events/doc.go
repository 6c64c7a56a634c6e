// Package events is the lifecycle event bus of mgmevents: Spring Data
// MongoDB's seven mapping events for Go models, plus the query and update
// events that let listeners see and rewrite every filter, update and
// pipeline a repository sends. Listeners are typed and ordered, an error
// from a Before* listener aborts the operation before it reaches the
// database, and policies (see Policy) form a layer no other listener can
// undo; a repository refuses a model whose policy tags no registered
// policy enforces (see TagEnforcer). A Before* listener adds to the
// write through the Event's methods (see Event.AddExtra). Interceptors
// (see Interceptor) wrap whole repository operations, for tracing and
// timing.
//
// The package does no database I/O and imports nothing else of this
// module: package repo publishes the events around each operation,
// package mql helps listeners edit filters, updates and pipelines of any
// shape, and package events/async runs After* listeners off the
// operation's path.
package events
