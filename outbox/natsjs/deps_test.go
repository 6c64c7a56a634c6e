package natsjs_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyTestsLinkTheServer keeps nats-server out of every package of the
// module but natstest and example_app, and the CloudEvents SDK, which the
// tests decode with, out of all: an application using the library links
// the NATS client only.
func TestOnlyTestsLinkTheServer(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to list the module's packages")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`,
		"github.com/mgmevents/mgmevents/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module, server, sdk = "github.com/mgmevents/mgmevents/", "github.com/nats-io/nats-server/", "github.com/cloudevents/"
	checked := 0
	for line := range strings.Lines(string(out)) {
		pkg, deps, _ := strings.Cut(strings.TrimSpace(line), " ")
		mayServe := strings.HasSuffix(pkg, "/natstest") || strings.HasPrefix(pkg, module+"example_app")
		checked++
		for dep := range strings.FieldsSeq(deps) {
			if strings.HasPrefix(dep, sdk) {
				t.Errorf("%s depends on %s; only tests may", pkg, dep)
				break
			}
			if !mayServe && strings.HasPrefix(dep, server) {
				t.Errorf("%s depends on %s; only tests, natstest and example_app may", pkg, dep)
				break
			}
		}
	}
	if checked < 3 {
		t.Fatalf("go list gave %d packages to check:\n%s", checked, out)
	}
}
