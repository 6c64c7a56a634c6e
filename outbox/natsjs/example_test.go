package natsjs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mgmevents/mgmevents/outbox"
	"github.com/mgmevents/mgmevents/outbox/natsjs"
	"github.com/mgmevents/mgmevents/outbox/natsjs/natstest"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/bson"
)

func Example() {
	ctx := context.Background()
	srv, err := natstest.NewServer() // a real JetStream server, in-process
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	js, err := srv.JetStream()
	if err != nil {
		panic(err)
	}
	defer js.Conn().Close()
	// The stream captures every default subject; its duplicate window must
	// outlast the relay's longest redelivery delay.
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       "OUTBOX",
		Subjects:   []string{natsjs.DefaultPrefix + ".>"},
		Duplicates: 10 * time.Minute,
	})
	if err != nil {
		panic(err)
	}
	pub, err := natsjs.New(js) // give it to outbox.NewRelay
	if err != nil {
		panic(err)
	}

	data, _ := bson.Marshal(bson.D{{Key: "total", Value: 42}})
	m := outbox.Message{
		ID: "0190e4d2-7c3a-7b9e-8f00-0123456789ab", Type: "order.placed", Source: "orders",
		Subject: "665f1c2e8b3e4a0012345678", Seq: 1, Data: data, Attempt: 1,
	}
	for range 2 { // a redelivery: JetStream keeps one copy
		if err := pub.Publish(ctx, m); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%+v\n", pub.Stats())

	// A consumer filters on the subject and reads the CloudEvent JSON.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"outbox.orders.>"},
	})
	if err != nil {
		panic(err)
	}
	got, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		panic(err)
	}
	var ev struct {
		Type       string `json:"type"`
		SubjectSeq int64  `json:"subjectseq"`
	}
	if err := json.Unmarshal(got.Data(), &ev); err != nil {
		panic(err)
	}
	fmt.Println(got.Subject(), got.Headers().Get("Content-Type"), ev.Type, ev.SubjectSeq)
	fmt.Println(string(got.Data()))
	// Output:
	// {Published:1 Duplicates:1}
	// outbox.orders.order.placed application/cloudevents+json order.placed 1
	// {"specversion":"1.0","id":"0190e4d2-7c3a-7b9e-8f00-0123456789ab","source":"/orders","type":"order.placed","subject":"665f1c2e8b3e4a0012345678","datacontenttype":"application/json","subjectseq":1,"attempt":1,"data":{"total":42}}
}
