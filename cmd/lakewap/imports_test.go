package main

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allowedImports is the package map of docs/DESIGN.md ("Layout"): the
// lakewap packages each non-test package may import. A package missing
// here, or an import it does not allow, fails: change the table there and
// this map together.
var allowedImports = map[string][]string{
	"schemas":                     nil,
	"internal/backoff":            nil,
	"internal/buildinfo":          nil,
	"internal/kafkalimit":         nil,
	"internal/kafkaready":         nil,
	"consumer":                    {"internal/backoff", "internal/kafkalimit", "internal/kafkaready"},
	"ingest":                      {"consumer", "schemas"},
	"pipeline":                    {"schemas", "internal/backoff"},
	"pipeline/runner":             {"pipeline", "schemas", "internal/backoff"},
	"pipeline/lakefs":             {"pipeline"},
	"pipeline/lakefs/auditsource": {"audit", "pipeline", "pipeline/lakefs"},
	"audit":                       {"schemas"},
	"notify":                      {"schemas", "internal/backoff", "internal/kafkalimit"},
	"internal/config":             {"audit", "consumer", "internal/janitor", "notify", "pipeline", "pipeline/runner", "schemas"},
	"internal/janitor":            {"pipeline", "pipeline/lakefs", "schemas"},
	"internal/devstack":           {"internal/kafkatest"},
	"internal/lineage":            {"pipeline", "schemas"},
	"internal/status":             {"pipeline", "schemas"},
	"internal/metrics":            {"pipeline", "pipeline/runner"},
	"internal/runstore":           {"pipeline", "schemas"},
	"internal/runs":               {"consumer", "internal/config", "internal/janitor", "pipeline", "schemas"},
	"internal/opclient":           {"consumer", "internal/config", "schemas"},
	"internal/reference":          {"audit", "internal/config", "schemas"},
	"internal/harness":            {"audit", "internal/config", "internal/devstack", "internal/opclient", "internal/runs", "pipeline", "pipeline/lakefs", "schemas"},
}

// pureImports are the only packages outside lakewap that a pure package
// may import: the WAP core decides and the runner does the I/O, so the
// core has no file, network, process or log access (docs/DESIGN.md,
// "Layout"). time is there for its types: the core is handed now.
var pureImports = map[string][]string{
	"pipeline": {"cmp", "context", "crypto/sha256", "encoding/hex", "encoding/json", "errors", "fmt", "maps",
		"slices", "strconv", "strings", "sync", "sync/atomic", "time"},
}

func TestPackageMap(t *testing.T) {
	const module = "github.com/lakewap/lakewap/"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "tools") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil || pkg.Name == "main" || rel == "." {
			return nil // no Go files, or a command: commands wire everything
		}
		allowed, ok := allowedImports[rel]
		if !ok {
			if strings.HasSuffix(rel, "test") { // test helpers (kafkatest, registrytest)
				return nil
			}
			t.Errorf("package %s is not in the package map (docs/DESIGN.md, allowedImports)", rel)
			return nil
		}
		seen++
		pure, isPure := pureImports[rel]
		for _, imp := range pkg.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			switch {
			case ours && !slices.Contains(allowed, dep):
				t.Errorf("%s imports %s; the package map allows %v", rel, dep, allowed)
			case !ours && isPure && !slices.Contains(pure, imp):
				t.Errorf("%s imports %s; it is pure and may import only %v outside lakewap", rel, imp, pure)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(allowedImports) {
		t.Errorf("found %d of the %d packages in the map", seen, len(allowedImports))
	}
}
