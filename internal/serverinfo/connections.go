package serverinfo

import (
	"reflect"

	"go.mongodb.org/mongo-driver/mongo"
)

var single clientCache[bool]

// OneConnection reports whether client opens at most one connection to
// each server (maxPoolSize 1), so that the server runs its commands one at
// a time: the only way FerretDB 1.x, whose updates read a document and
// write it back whole, applies concurrent updates of one document without
// losing any. The driver does not expose its pool's size, so it is read
// from the driver's topology (mongo-driver 1.17); when that cannot be
// read, it reports false. The answer is cached per client.
func OneConnection(client *mongo.Client) bool {
	if client == nil {
		return false
	}
	if v, ok := single.load(client); ok {
		return v
	}
	one := poolSizes(client) == 1
	single.store(client, one)
	return one
}

// poolSizes returns the largest maxPoolSize of client's servers, 0 for
// unbounded or unknown.
func poolSizes(client *mongo.Client) (size uint64) {
	defer func() {
		if recover() != nil { // the driver's layout changed: unknown
			size = 0
		}
	}()
	if client == nil {
		return 0
	}
	topo := field(reflect.ValueOf(client), "deployment") // driver.Deployment holding a *topology.Topology
	if topo.Kind() == reflect.Interface {
		topo = topo.Elem()
	}
	servers := field(topo, "servers") // map[address.Address]*topology.Server
	if servers.Kind() != reflect.Map || servers.Len() == 0 {
		return 0
	}
	for it := servers.MapRange(); it.Next(); {
		n := field(field(it.Value(), "pool"), "maxSize")
		if n.Kind() != reflect.Uint64 || n.Uint() == 0 {
			return 0
		}
		size = max(size, n.Uint())
	}
	return size
}

// field returns the field name of the struct v is or points to, or the
// zero Value.
func field(v reflect.Value, name string) reflect.Value {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.FieldByName(name)
}
