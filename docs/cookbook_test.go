// Package docs_test checks the guides' code: every Go snippet of
// cookbook.md compiles, is gofmt'd, and runs on the embedded server.
package docs_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// imports are the packages a snippet may use, by the name it uses.
var imports = map[string]string{
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"os":         "os",
	"slog":       "log/slog",
	"strings":    "strings",
	"testing":    "testing",
	"time":       "time",
	"mgm":        "github.com/kamva/mgm/v3",
	"bson":       "go.mongodb.org/mongo-driver/bson",
	"mongo":      "go.mongodb.org/mongo-driver/mongo",
	"options":    "go.mongodb.org/mongo-driver/mongo/options",
	"events":     "github.com/mgmevents/mgmevents/events",
	"async":      "github.com/mgmevents/mgmevents/events/async",
	"repo":       "github.com/mgmevents/mgmevents/repo",
	"mongotest":  "github.com/mgmevents/mgmevents/mongotest",
	"mql":        "github.com/mgmevents/mgmevents/mql",
	"outbox":     "github.com/mgmevents/mgmevents/outbox",
	"listeners":  "github.com/mgmevents/mgmevents/listeners",
	"autokeys":   "github.com/mgmevents/mgmevents/listeners/autokeys",
	"tenancy":    "github.com/mgmevents/mgmevents/listeners/tenancy",
	"softdelete": "github.com/mgmevents/mgmevents/listeners/softdelete",
	"encryption": "github.com/mgmevents/mgmevents/listeners/encryption",
}

// recipe is one section of the cookbook: its question, its Go snippet and
// the line the snippet starts on.
type recipe struct {
	question, body, code string
	line                 int
}

var (
	sectionRE = regexp.MustCompile(`(?m)^## (.+)$`)
	snippetRE = regexp.MustCompile("(?s)```go\n(.*?)```")
	linkRE    = regexp.MustCompile(`\]\(([a-z-]+\.md)(#[a-z0-9_-]+)?\)`)
)

// recipes splits cookbook.md into its sections.
func recipes(t *testing.T, md string) []recipe {
	t.Helper()
	var out []recipe
	heads := sectionRE.FindAllStringSubmatchIndex(md, -1)
	for i, h := range heads {
		end := len(md)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		r := recipe{question: md[h[2]:h[3]], body: md[h[0]:end]}
		if m := snippetRE.FindStringSubmatchIndex(r.body); m != nil {
			r.code = r.body[m[2]:m[3]]
			r.line = strings.Count(md[:h[0]+m[2]], "\n") + 1
		}
		out = append(out, r)
	}
	return out
}

// TestCookbookShape: 15 to 25 questions, each in the contents, with one
// gofmt'd Go snippet and a link to a guide whose heading exists.
func TestCookbookShape(t *testing.T) {
	b, err := os.ReadFile("cookbook.md")
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	rs := recipes(t, md)
	if len(rs) < 15 || len(rs) > 25 {
		t.Errorf("cookbook.md has %d questions; want 15 to 25", len(rs))
	}
	for _, r := range rs {
		if !strings.HasSuffix(r.question, "?") {
			t.Errorf("%q: a heading asks a question", r.question)
		}
		if !strings.Contains(md, "](#"+slug(r.question)+")") {
			t.Errorf("%q: not in the contents", r.question)
		}
		if strings.Count(r.body, "```go") != 1 {
			t.Errorf("%q: want one Go snippet, got %d", r.question, strings.Count(r.body, "```go"))
			continue
		}
		if f, err := format.Source([]byte(r.code)); err != nil || string(f) != r.code {
			t.Errorf("%q (cookbook.md:%d): the snippet is not gofmt'd: %v", r.question, r.line, err)
		}
		links := linkRE.FindAllStringSubmatch(r.body, -1)
		if len(links) == 0 {
			t.Errorf("%q: no link to a guide", r.question)
		}
		for _, l := range links {
			checkLink(t, r.question, l[1], strings.TrimPrefix(l[2], "#"))
		}
	}
}

// checkLink fails t unless guide exists and, when anchor is set, has a
// heading of that anchor.
func checkLink(t *testing.T, question, guide, anchor string) {
	t.Helper()
	b, err := os.ReadFile(guide)
	if err != nil {
		t.Errorf("%q links to %s: %v", question, guide, err)
		return
	}
	if anchor == "" {
		return
	}
	for _, h := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(b), -1) {
		if slug(h[1]) == anchor {
			return
		}
	}
	t.Errorf("%q links to %s#%s, a heading %s does not have", question, guide, anchor, guide)
}

// slug is GitHub's anchor of a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestCookbook builds every snippet of cookbook.md into one test package,
// with testdata/cookbook/run_test.go, which calls them on the embedded
// server and checks what they store, and runs its tests (the snippets'
// own included). A snippet that does not compile fails it, naming the
// line of cookbook.md.
func TestCookbook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary of its own; not with -short")
	}
	b, err := os.ReadFile("cookbook.md")
	if err != nil {
		t.Fatal(err)
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("builds its package with the go command, which is not on PATH: %v", err)
	}
	// The package goes inside the module, so that its imports resolve
	// through go.mod; testdata keeps it out of ./... patterns.
	dir, err := os.MkdirTemp("testdata", "cookbook-run-")
	if err != nil {
		t.Skipf("cannot write the snippets' package into the module (a read-only copy?): %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	runner, err := os.ReadFile(filepath.Join("testdata", "cookbook", "run_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run_test.go"), runner, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, r := range recipes(t, string(b)) {
		src, err := snippetFile(r)
		if err != nil {
			t.Fatalf("%q (cookbook.md:%d): %v", r.question, r.line, err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("recipe%02d_test.go", i+1)), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(gocmd, "test", "-count=1", "./"+filepath.ToSlash(dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the cookbook's snippets fail:\n%s", out)
	}
}

// snippetFile returns a Go file of package cookbook that holds r's
// snippet, importing the packages it names, with a line directive so that
// errors name cookbook.md's lines.
func snippetFile(r recipe) ([]byte, error) {
	if r.code == "" {
		return nil, fmt.Errorf("no Go snippet")
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package cookbook\n"+r.code, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, id := range identifiers(f) {
		if path, ok := imports[id]; ok {
			used[path] = true
		}
	}
	var paths []string
	for p := range used {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var src bytes.Buffer
	fmt.Fprintf(&src, "// Code generated by TestCookbook from docs/cookbook.md (%s). DO NOT EDIT.\n\npackage cookbook\n\nimport (\n", r.question)
	for _, p := range paths {
		fmt.Fprintf(&src, "\t%q\n", p)
	}
	fmt.Fprintf(&src, ")\n\n//line cookbook.md:%d\n%s", r.line, r.code)
	return src.Bytes(), nil
}

// identifiers returns the names that qualify a selector in f (pkg in
// pkg.Name): the packages f may use.
func identifiers(f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				out = append(out, id.Name)
			}
		}
		return true
	})
	return out
}

// TestGuidesLinkToCookbook: every guide and the README link to the
// cookbook, and each link names one of its questions.
func TestGuidesLinkToCookbook(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\]\((?:docs/)?cookbook\.md(?:#([a-z0-9_-]+))?\)`)
	for _, f := range append(files, "../README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			checkLink(t, f, "cookbook.md", m[1])
		}
		if len(re.FindAllString(string(b), -1)) == 0 && f != "cookbook.md" && !slices.Contains(unlinked, f) {
			t.Errorf("%s does not link to the cookbook", f)
		}
	}
}

// unlinked are the guides with no task of the cookbook.
var unlinked = []string{"outbox-nats.md", "performance.md", "support.md", "comparison.md", "packages.md"}
