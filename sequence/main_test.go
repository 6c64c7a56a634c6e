package sequence_test

import (
	"os"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
)

// srv is the server every test in this package shares.
var srv *mongotest.Server

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain()) // re-executed as a writer process
	}
	os.Exit(mongotest.Main(m, &srv))
}
