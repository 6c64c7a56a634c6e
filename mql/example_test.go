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
	show(mql.And(bson.M{"$or": bson.A{bson.M{"tenant": "globex"}, bson.M{"public": true}}}, acme))
	show(mql.And(bson.M{"tenant": "globex"}, acme)) // the same field: a nested conjunction
	show(mql.And(nil, acme))
	// Output:
	// {"$or":[{"tenant":"globex"},{"public":true}],"tenant":"acme"}
	// {"$and":[{"tenant":"globex"},{"tenant":"acme"}]}
	// {"tenant":"acme"}
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
	show(u.Value())
	show(caller)
	// Output:
	// {"$set":{"title":"new","updatedAt":{"$date":"2026-11-30T00:00:00Z"}}}
	// {"$set":{"title":"new"}}
}

// show prints document d as relaxed extended JSON.
func show(d any) {
	b, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
}
