package mongotest_test

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/mongotest"
	"go.mongodb.org/mongo-driver/bson"
)

func ExampleNewServer() {
	ctx := context.Background()
	srv, err := mongotest.NewServer(ctx) // MONGODB_URI, when set, is used instead
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := srv.Client(ctx)
	if err != nil {
		panic(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database(mongotest.UniqueName("example")).Collection("things")
	defer coll.Database().Drop(ctx)
	if _, err := coll.InsertOne(ctx, bson.M{"name": "thing"}); err != nil {
		panic(err)
	}
	n, err := coll.CountDocuments(ctx, bson.M{})
	fmt.Println(n, err)
	// Output: 1 <nil>
}
