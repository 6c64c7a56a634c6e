package listeners_test

import (
	"context"
	"os"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
)

var ctx = context.Background()

// srv is the server every test in this package shares.
var srv *mongotest.Server

func TestMain(m *testing.M) { os.Exit(mongotest.Main(m, &srv)) }
