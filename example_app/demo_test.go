package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/mgmevents/mgmevents/mongotest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDemo(t *testing.T) {
	srv := mongotest.Start(t)
	var out bytes.Buffer
	require.NoError(t, demo(context.Background(), &out, srv.URI, mongotest.UniqueName("demo")), out.String())
	s := out.String()
	for _, want := range []string{
		"[event] BeforeConvert Insert     users",
		"[event] AfterConvert  Find       users",
		"[event] AfterDelete   Delete     users",
		"-> 30 numbers, 30 distinct",
		"-> order number ORD",
		"-> 30 users left",
	} {
		assert.Contains(t, s, want)
	}
	assert.Regexp(t, `userId=[0-9a-f-]{36} longId=1 unchanged`, s)
}

// TestDemoContinuesWithData runs the whole program twice on one -data
// directory: the second run's numbers start after the first run's.
func TestDemoContinuesWithData(t *testing.T) {
	if os.Getenv(mongotest.EnvURI) != "" {
		t.Skip("-data is for the embedded server; " + mongotest.EnvURI + " is set")
	}
	dir := t.TempDir()
	first := func() int64 {
		var out bytes.Buffer
		code := demoMain([]string{"-data", dir}, &out)
		require.Equal(t, 0, code, out.String())
		m := regexp.MustCompile(`1\. Insert a user[\s\S]*?-> userId=\S+ longId=(\d+)`).FindStringSubmatch(out.String())
		require.NotNil(t, m, out.String())
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	a, b := first(), first()
	assert.Equal(t, int64(1), a)
	assert.Greater(t, b, int64(31), fmt.Sprintf("the second run continues after the first (got %d)", b))
}
