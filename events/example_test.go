package events_test

import (
	"fmt"
	"time"

	"github.com/mgmevents/mgmevents/events"
	"go.mongodb.org/mongo-driver/bson"
)

// And confines any filter to a condition; nothing in the filter can widen
// the result.
func ExampleAnd() {
	userFilter := bson.M{"$or": bson.A{bson.M{"tenant": "globex"}, bson.M{"public": true}}}
	f := events.And(userFilter, bson.E{Key: "tenant", Value: "acme"})
	fmt.Println(f[0].Key, len(f[0].Value.(bson.A)))
	fmt.Println(events.And(nil, bson.E{Key: "tenant", Value: "acme"}))
	// Output:
	// $and 2
	// [{tenant acme}]
}

// ParseUpdate lets a BeforeUpdate listener add a field the caller did not
// set, without changing the caller's update.
func ExampleParseUpdate() {
	caller := bson.M{"$set": bson.M{"title": "new"}}
	u, err := events.ParseUpdate(caller)
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
