package tracing_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyTheAPIIsLinked: the library's packages link the OpenTelemetry
// API, never its SDK, an exporter or a contrib module (otelmongo): those
// are for tests and example_app. The API is the modules otel, otel/trace
// and otel/metric, and what package otel itself imports: otel/log (the
// logs API) and auto/sdk. mongotest is left out: it embeds FerretDB, which
// brings its own.
func TestOnlyTheAPIIsLinked(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to list the module's packages")
	}
	const module = "github.com/mgmevents/mgmevents/"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	moduleOf := map[string]string{}
	for line := range strings.Lines(string(out)) {
		pkg, mod, _ := strings.Cut(strings.TrimSpace(line), " ")
		moduleOf[pkg] = mod
	}
	out, err = exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"go.opentelemetry.io/otel": true, "go.opentelemetry.io/otel/trace": true, "go.opentelemetry.io/otel/metric": true,
		"go.opentelemetry.io/otel/log": true, "go.opentelemetry.io/auto/sdk": true,
	}
	checked, api := 0, false
	for line := range strings.Lines(string(out)) {
		pkg, deps, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.HasPrefix(pkg, module+"mongotest") || strings.HasPrefix(pkg, module+"example_app") || strings.HasSuffix(pkg, "/natstest") {
			continue
		}
		checked++
		for dep := range strings.FieldsSeq(deps) {
			mod := moduleOf[dep]
			if !strings.HasPrefix(mod, "go.opentelemetry.io/") {
				continue
			}
			if !allowed[mod] {
				t.Errorf("%s links %s, of module %s; only tests and example_app may", pkg, dep, mod)
			}
			api = api || pkg == module+"listeners/tracing"
		}
	}
	if checked < 10 || !api {
		t.Fatalf("go list gave %d packages to check, and tracing linked the API: %v\n%s", checked, api, out)
	}
}
