package mql_test

import (
	"fmt"
	"time"

	"github.com/mgmevents/mgmevents/mql"
	"go.mongodb.org/mongo-driver/bson"
)

// And confines any filter to a condition; nothing in the filter can widen
// the result.
func ExampleAnd() {
	acme := bson.E{Key: "tenant", Value: "acme"}
	fmt.Println(mql.And(bson.M{"$or": bson.A{bson.M{"tenant": "globex"}, bson.M{"public": true}}}, acme))
	fmt.Println(mql.And(bson.M{"tenant": "globex"}, acme)) // the same field: a nested conjunction
	fmt.Println(mql.And(nil, acme))
	// Output:
	// [{$or [map[tenant:globex] map[public:true]]} {tenant acme}]
	// [{$and [map[tenant:globex] [{tenant acme}]]}]
	// [{tenant acme}]
}

// ParseUpdate lets a BeforeUpdate listener add a field the caller did not
// set, without changing the caller's update.
func ExampleParseUpdate() {
	caller := bson.M{"$set": bson.M{"title": "new"}}
	u, err := mql.ParseUpdate(caller)
	if err != nil {
		panic(err)
	}
	if !u.Touches("updatedAt") {
		_ = u.Add("$set", "updatedAt", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	}
	fmt.Println(u.Value())
	fmt.Println(caller)
	// Output:
	// [{$set [{title new} {updatedAt 2026-11-30 00:00:00 +0000 UTC}]}]
	// map[$set:map[title:new]]
}
