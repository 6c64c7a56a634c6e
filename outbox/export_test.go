package outbox

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/mongo"
)

// WithAtomicWrites makes a relay write as on a server that applies
// filtered writes atomically, or not, whatever the server says: the tests
// run the conditional writes on a single-connection client of the embedded
// server, which applies them one at a time.
func WithAtomicWrites(atomic bool) RelayOption { return func(c *relayConfig) { c.atomic = &atomic } }

// WithMaxHung sets how many abandoned publishes may still run before the
// relay stops publishing (MaxHungPublishes by default).
func WithMaxHung(n int64) RelayOption { return func(c *relayConfig) { c.maxHung = n } }

// WithCountEvery sets how often at most a Drain counts the pending events
// (ten seconds by default).
func WithCountEvery(d time.Duration) RelayOption { return func(c *relayConfig) { c.countEvery = d } }

// WithPlace sets where in n documents the relay starts the chunk after
// one that collided with another relay's claims (a random place by
// default).
func WithPlace(place func(n int) int) RelayOption { return func(c *relayConfig) { c.place = place } }

// ID returns the relay's ID, as it appears in Relays.
func (r *Relay) ID() string { return r.id }

// OwnerOfLease returns which of members the document of a lease _id
// ("<key>@<slot>") falls to.
func OwnerOfLease(leaseID string, members []string) string {
	return owner(leaseID[:strings.LastIndexByte(leaseID, '@')], members)
}

// SetPace sets the relay's measured pace, how long it takes per
// document, which sizes its chunks (see chunkSize).
func (r *Relay) SetPace(d time.Duration) { r.pace.Store(int64(d)) }

// LeaseKey returns the lease key of the document of coll with _id id, as
// the _ids of its leases start ("<key>@<slot>").
func LeaseKey(coll *mongo.Collection, id any) string { return keyPrefix(coll) + idKey(id) }
