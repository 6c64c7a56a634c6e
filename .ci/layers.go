//go:build ignore

// Command layers checks that the module's imports run one way, as the
// "Layers" of docs/packages.md says: each package of the module may import, of the
// module, only the packages its layer allows. It reads what `go list`
// reports (the imports of the non-test files), and fails naming each edge
// that breaks the layering, and each package that no layer names.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// A layer is a set of packages and what, of the module, they may import.
// Paths are relative to the module; "p/..." is p and every package below.
type layer struct {
	name     string
	packages []string
	imports  []string
}

// below is what the listeners and policies, and the integrations, may
// import: every layer under them.
var below = []string{"events", "model", "internal/...", "mql", "sequence", "listeners/policy"}

// layers, bottom up; a package belongs to the first layer that names it.
var layers = []layer{
	{"the contract", []string{"events", "model"}, nil},
	{"the contract's adapters", []string{"events/lifecycle", "events/async"}, []string{"events"}},
	{"helpers", []string{"internal/..."}, []string{"events", "model", "internal/..."}},
	{"the query language", []string{"mql"}, []string{"model", "internal/..."}},
	{"the allocator", []string{"sequence"}, []string{"internal/..."}},
	{"the policy toolkit", []string{"listeners/policy"}, []string{"events", "model", "mql", "internal/..."}},
	{"the repository", []string{"repo"}, []string{"events", "events/async", "model", "mql", "sequence", "internal/..."}},
	{"an integration", []string{"listeners/tracing"}, append([]string{"outbox"}, below...)},
	{"an integration", []string{"outbox/natsjs"}, []string{"outbox"}},
	{"the listeners and policies", []string{"listeners", "listeners/autokeys", "listeners/tenancy", "listeners/softdelete", "listeners/encryption", "outbox"}, below},
	{"test support", []string{"mongotest/...", "outbox/natsjs/natstest"}, []string{"mongotest/..."}},
	{"the demo and the cookbook's tests", []string{"example_app", "docs"}, []string{"..."}},
}

func main() {
	mod, err := goList("-m")
	if err != nil {
		fail(2, err)
	}
	out, err := goList("-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	if err != nil {
		fail(2, err)
	}
	prefix := strings.TrimSpace(mod) + "/"
	bad := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], prefix)
		for _, problem := range check(pkg, fields[1:], prefix) {
			fmt.Fprintln(os.Stderr, problem)
			bad++
		}
	}
	if bad > 0 {
		fail(1, fmt.Errorf("%d breaks of the layering (docs/packages.md, Layers)", bad))
	}
}

// check returns what is wrong with package pkg's imports.
func check(pkg string, imports []string, prefix string) []string {
	l, ok := layerOf(pkg)
	if !ok {
		return []string{fmt.Sprintf("%s: in no layer; name it in .ci/layers.go and in docs/packages.md's Layers", pkg)}
	}
	var problems []string
	for _, imp := range imports {
		dep, ours := strings.CutPrefix(imp, prefix)
		if ours && !matches(l.imports, dep) {
			problems = append(problems, fmt.Sprintf("%s -> %s: %s may import %s", pkg, dep, l.name, allowed(l)))
		}
	}
	return problems
}

// allowed says what l's packages may import.
func allowed(l layer) string {
	if len(l.imports) == 0 {
		return "nothing of the module"
	}
	return "only " + strings.Join(l.imports, ", ")
}

// layerOf returns the first layer that names pkg.
func layerOf(pkg string) (layer, bool) {
	for _, l := range layers {
		if matches(l.packages, pkg) {
			return l, true
		}
	}
	return layer{}, false
}

// matches reports whether pkg is one of patterns.
func matches(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if p == "..." || p == pkg {
			return true
		}
		if base, ok := strings.CutSuffix(p, "/..."); ok && (pkg == base || strings.HasPrefix(pkg, base+"/")) {
			return true
		}
	}
	return false
}

func goList(args ...string) (string, error) {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(code)
}
