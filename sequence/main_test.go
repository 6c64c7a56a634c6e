package sequence_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
)

// srv is the server every test in this package shares.
var srv *mongotest.Server

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	s, err := mongotest.NewServer(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv = s
	code := m.Run()
	s.Close()
	os.Exit(code)
}
