package natstest_test

import (
	"context"
	"fmt"

	"github.com/mgmevents/mgmevents/outbox/natsjs/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

func ExampleNewServer() {
	ctx := context.Background()
	srv, err := natstest.NewServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	js, err := srv.JetStream()
	if err != nil {
		panic(err)
	}
	defer js.Conn().Close()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}})
	if err != nil {
		panic(err)
	}
	if _, err := js.Publish(ctx, "events.hello", []byte("hello")); err != nil {
		panic(err)
	}
	info, err := s.Info(ctx)
	fmt.Println(info.State.Msgs, err)
	// Output: 1 <nil>
}
