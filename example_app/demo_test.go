package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
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

	// The pages: the 31 users newest first, each once, with the total.
	pages := regexp.MustCompile(`(?m)^   page (\d) of (\d+) users: longId ([\d ]+)$`).FindAllStringSubmatch(s, -1)
	require.Len(t, pages, 4, s)
	var listed []string
	for i, p := range pages {
		assert.Equal(t, strconv.Itoa(i+1), p[1])
		assert.Equal(t, "31", p[2], "the total")
		listed = append(listed, strings.Fields(p[3])...)
	}
	require.Len(t, listed, 31)
	for i, id := range listed {
		assert.Equal(t, strconv.Itoa(31-i), id, "newest first, none repeated or skipped")
	}
	assert.Contains(t, s, "-> 4 pages;")

	// Part 2, the policies.
	for _, want := range []string{
		"acme   no=1 Ann\n",
		"acme   no=2 Bob\n",
		"globex no=1 Cy\n",
		"-> acme counts 2 customers, globex 1",
		"-> with no tenant, refused: tenancy: no tenant in the context",
		"-> acme finds Ann (no=1) by ann@example.com",
		"-> globex looks for the same email: not found",
		"-> Ann deleted: acme sees 1 customer, 2 with softdelete.WithDeleted",
		"-> restored (softdelete.RestoreModel unsets the marks): acme sees 2 customers",
	} {
		assert.Contains(t, s, want)
	}
	atRest := regexp.MustCompile(`(?s)10\. What is at rest.*?\n\n`).FindString(s)
	require.NotEmpty(t, atRest, s)
	assert.Regexp(t, `\n   tenant +"acme"\n`, atRest)
	assert.Regexp(t, `\n   email +\{"\$binary":\{"base64":"[^"]+","subType":"8e"\}\}\n`, atRest)
	assert.Regexp(t, `\n   email_bidx +\{"\$binary":`, atRest)
	assert.NotContains(t, atRest, "ann@example.com", "the email is not stored in plaintext")

	// Part 3, the outbox.
	for _, want := range []string{
		"-> 2 purchases visible; 3 documents hold undelivered events",
		"-> 5 delivered, 0 on a second pass; the cancelled purchase's document is gone now (2 left)",
	} {
		assert.Contains(t, s, want)
	}
	consumed := regexp.MustCompile(`(?m)^   purchase …(\w+)  #(\d) +(\S+)$`).FindAllStringSubmatch(s, -1)
	require.Len(t, consumed, 5, s)
	next := map[string]int{}
	var types []string
	for _, m := range consumed {
		seq, _ := strconv.Atoi(m[2])
		next[m[1]]++
		assert.Equal(t, next[m[1]], seq, "in order per purchase")
		types = append(types, m[3])
	}
	assert.ElementsMatch(t, []string{"purchase.placed", "purchase.placed", "purchase.placed", "purchase.paid", "purchase.cancelled"}, types)
}

// TestDemoContinuesWithData runs the whole program twice on one -data
// directory: the second run's numbers start after the first run's.
func TestDemoContinuesWithData(t *testing.T) {
	if os.Getenv(mongotest.EnvURI) != "" {
		t.Skip("-data is for the embedded server; " + mongotest.EnvURI + " is set")
	}
	dir := t.TempDir()
	run := func() (first, next int64) {
		var out bytes.Buffer
		code := demoMain([]string{"-data", dir}, &out)
		require.Equal(t, 0, code, out.String())
		m := regexp.MustCompile(`1\. Insert a user[\s\S]*?-> userId=\S+ longId=(\d+)`).FindStringSubmatch(out.String())
		require.NotNil(t, m, out.String())
		first, _ = strconv.ParseInt(m[1], 10, 64)
		m = regexp.MustCompile(`the next run continues at (\d+)`).FindStringSubmatch(out.String())
		require.NotNil(t, m, out.String())
		next, _ = strconv.ParseInt(m[1], 10, 64)
		return first, next
	}
	a, promised := run()
	b, _ := run()
	assert.Equal(t, int64(1), a)
	assert.Greater(t, promised, int64(31))
	assert.Equal(t, promised, b, fmt.Sprintf("the second run continues where the first stopped, no gap (got %d)", b))
}
