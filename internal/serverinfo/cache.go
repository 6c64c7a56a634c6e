package serverinfo

import (
	"runtime"
	"sync"
	"weak"

	"go.mongodb.org/mongo-driver/mongo"
)

// clientCache holds one answer per client, without keeping the client
// alive: an entry goes when its client is collected, so a program that
// makes clients and drops them (one per tenant, per test) does not keep
// them all.
type clientCache[V any] struct{ m sync.Map } // weak.Pointer[mongo.Client] -> V

func (c *clientCache[V]) load(client *mongo.Client) (v V, ok bool) {
	a, ok := c.m.Load(weak.Make(client))
	if !ok {
		return v, false
	}
	return a.(V), true
}

func (c *clientCache[V]) store(client *mongo.Client, v V) {
	key := weak.Make(client)
	if _, loaded := c.m.Swap(key, v); !loaded {
		runtime.AddCleanup(client, func(k weak.Pointer[mongo.Client]) { c.m.Delete(k) }, key)
	}
}

// len returns the number of entries.
func (c *clientCache[V]) len() int {
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	return n
}
