package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// README's Layout names every package of the module, so that a newcomer
// finds each one there: a package added without a line fails this test.
func TestTheReadmeLayoutNamesEveryPackage(t *testing.T) {
	root, files := tracked(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	layout, _, _ := strings.Cut(after, "\n## ")
	dirs := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") && !strings.Contains(f, "/testdata/") {
			dirs[filepath.ToSlash(filepath.Dir(f))] = true
		}
	}
	var missing []string
	for d := range dirs {
		if d == "." || strings.HasPrefix(d, "bench/") || strings.HasPrefix(d, "infra/") || strings.HasPrefix(d, "localstack/") {
			continue // named by their folders' lines (bench/, infra/, localstack/)
		}
		if !regexp.MustCompile(`(^|[\s,(])` + regexp.QuoteMeta(d) + `([\s,:)/]|$)`).MatchString(layout) {
			missing = append(missing, d)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("README.md's Layout does not name these packages: %s", strings.Join(missing, ", "))
	}
}
