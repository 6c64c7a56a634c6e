package outbox_test

import (
	"os"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
)

// srv is the server every test in this package shares.
var srv *mongotest.Server

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(mongotest.Main(m, &srv))
}
