package autokeys_test

import (
	"os"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
)

// srv is the server every test in this package shares.
var srv *mongotest.Server

func TestMain(m *testing.M) { os.Exit(mongotest.Main(m, &srv)) }
