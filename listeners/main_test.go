package listeners_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
)

var srv *mongotest.Server

func TestMain(m *testing.M) {
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
