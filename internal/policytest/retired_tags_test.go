package policytest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// retired matches the struct tags the policy tag replaced (tenant, encrypt
// and softdelete keys), which model now ignores like any unknown key: a
// model or a guide still using one would leave its fields unprotected
// without an error.
var retired = regexp.MustCompile(`\b(` + strings.Join([]string{"tenant", "encrypt", "softdelete"}, "|") + `):\\?"`)

// TestNoRetiredPolicyTags: no Go file or guide of the module uses a tag
// key the policy tag replaced; write policy:"tenant", policy:"encrypt,eq",
// policy:"softdelete,at" and so on (the CHANGELOG, which records the
// rename, aside).
func TestNoRetiredPolicyTags(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || d.Name() == "CHANGELOG.md":
			return nil
		case !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := retired.FindString(line); m != "" {
				t.Errorf("%s:%d: %s is a retired tag; use the policy tag (see docs/policies.md#registration)", path, i+1, strings.TrimSuffix(m, `"`))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
