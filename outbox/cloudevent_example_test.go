package outbox_test

import (
	"fmt"
	"time"

	"github.com/mgmevents/mgmevents/outbox"
	"go.mongodb.org/mongo-driver/bson"
)

func ExampleMessage_CloudEvent() {
	data, err := bson.Marshal(bson.D{{Key: "order", Value: "A-17"}, {Key: "total", Value: 42}})
	if err != nil {
		panic(err)
	}
	m := outbox.Message{
		ID:      "0190e4d2-7c3a-7b9e-8f00-0123456789ab",
		Type:    "order.placed",
		Source:  "orders",
		Subject: "665f1c2e8b3e4a0012345678",
		Seq:     1,
		Time:    time.Date(2024, 6, 4, 10, 30, 0, 0, time.UTC),
		Data:    data,
		Attempt: 1,
	}
	ce, err := m.CloudEvent()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(ce))
	// Output:
	// {"specversion":"1.0","id":"0190e4d2-7c3a-7b9e-8f00-0123456789ab","source":"/orders","type":"order.placed","subject":"665f1c2e8b3e4a0012345678","time":"2024-06-04T10:30:00Z","datacontenttype":"application/json","subjectseq":1,"attempt":1,"data":{"order":"A-17","total":42}}
}
