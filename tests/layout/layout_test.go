// Package layout holds the repository's layout to its package map: which
// lakewap packages each package may import (docs/DESIGN.md, "Layout").
package layout

import (
	"bytes"
	"flag"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// packageMap is the package map: the lakewap packages each non-test
// package may import, and a note for the table. A package missing here,
// or an import it does not allow, fails TestPackageMap; docs/DESIGN.md's
// import table is generated from this list (-update writes it).
var packageMap = []struct {
	pkg     string
	allowed []string
	note    string
}{
	{"schemas", nil, ""},
	{"internal/backoff", nil, ""},
	{"internal/flight", nil, ""},
	{"internal/buildinfo", nil, ""},
	{"internal/loglimit", nil, "lines outside input can make, a few a minute per kind"},
	{"kafka", []string{"internal/backoff"}, "lakewap's Message, connections, writers, topic admin, size limits"},
	{"kafka/kafkatest", []string{"kafka"}, "the test cluster: kfake or $LAKEWAP_TEST_KAFKA_BROKERS"},
	{"consumer", []string{"internal/backoff", "internal/loglimit", "kafka"}, ""},
	{"ingest", []string{"consumer", "kafka", "schemas"}, "not `pipeline`, which plugs in through `ingest.Runner`"},
	{"pipeline", []string{"schemas", "internal/backoff"}, "outside lakewap only standard packages that do no I/O (pureImports)"},
	{"pipeline/runner", []string{"pipeline", "schemas", "internal/backoff"}, "the runner: effects, executors, the I/O the core asks for"},
	{"pipeline/lakefs", []string{"pipeline", "schemas", "internal/flight"}, "the error classes it maps to; schemas.Clip for lakeFS's error texts"},
	{"pipeline/lakefs/auditsource", []string{"audit", "pipeline", "pipeline/lakefs"}, "the lakeFS-to-audit adapter"},
	{"audit", []string{"schemas", "internal/flight", "internal/loglimit"}, ""},
	{"audit/blockstore", []string{"audit"}, "lakeFS's blockstore read directly: stored sizes (check stored_sizes)"},
	{"notify", []string{"schemas", "internal/backoff", "kafka"}, ""},
	{"internal/config", []string{"audit", "audit/blockstore", "consumer", "internal/janitor", "internal/runstore", "internal/tracing", "kafka", "notify", "pipeline", "pipeline/runner", "schemas"}, "the settings it builds for them; the largest writes they make to their topics"},
	{"internal/janitor", []string{"pipeline", "pipeline/lakefs", "schemas"}, ""},
	{"internal/devstack", []string{"kafka/kafkatest"}, "the Kafka half of the stack: kfake or a shared external cluster"},
	{"internal/lineage", []string{"kafka", "pipeline", "schemas"}, ""},
	{"internal/status", []string{"pipeline", "schemas"}, ""},
	{"internal/tracing", []string{"kafka", "pipeline", "schemas"}, "the runner's hooks it implements"},
	{"internal/runstore", []string{"consumer", "kafka", "pipeline", "schemas"}, ""},
	{"internal/runs", []string{"consumer", "internal/config", "internal/janitor", "internal/runstore", "kafka", "pipeline", "schemas"}, ""},
	{"internal/opclient", []string{"consumer", "internal/config", "kafka", "schemas"}, ""},
	{"internal/reference", []string{"audit", "internal/config", "schemas"}, "what it documents"},
	{"internal/harness", []string{"audit", "internal/backoff", "internal/config", "internal/devstack", "internal/opclient", "internal/runs", "kafka", "pipeline", "pipeline/lakefs", "schemas"},
		"its results watcher reads like `lakewap tail`"},
	{"internal/daemon", []string{"audit", "consumer", "ingest", "internal/buildinfo", "internal/config", "internal/janitor", "internal/lineage", "internal/opclient",
		"internal/runs", "internal/runstore", "internal/status", "internal/tracing", "kafka", "notify", "pipeline", "pipeline/lakefs", "pipeline/lakefs/auditsource", "pipeline/runner", "schemas"}, "it wires the parts; never a test stack"},
	{"internal/cli", []string{"audit", "internal/config", "internal/daemon", "internal/janitor", "internal/opclient", "internal/runs", "kafka", "pipeline", "pipeline/lakefs/auditsource", "schemas"},
		"what the commands do after their flags; never the embedded stack"},
	{"cmd/lakewap", []string{"internal/buildinfo", "internal/cli", "internal/config", "internal/daemon", "internal/harness",
		"internal/reference", "internal/runs", "pipeline", "schemas"}, "the command tree: flags, usage, exit codes; the stack only through `harness` (demo, prepare)"},
}

const module = "github.com/lakewap/lakewap/"

// pureImports are the only packages outside lakewap that a pure package
// may import: the WAP core decides and the runner does the I/O, so the
// core has no file, network, process or log access (docs/DESIGN.md,
// "Layout"). time is there for its types: the core is handed now.
var pureImports = map[string][]string{
	"pipeline": {"cmp", "context", "crypto/sha256", "encoding/hex", "encoding/json", "errors", "fmt", "maps",
		"slices", "strconv", "strings", "sync", "sync/atomic", "time"},
}

// kafkaGo is the Kafka client; it is imported by the Kafka tree (kafka/ and
// the group consumer beside it) and the test cluster's builders, and by no
// other package: the others speak kafka.Message.
const kafkaGo = "github.com/segmentio/kafka-go"

var kafkaGoImporters = []string{"kafka", "kafka/kafkatest", "consumer", "internal/devstack"}

var update = flag.Bool("update", false, "write the import table of docs/DESIGN.md from the package map")

// TestPackageMap walks the tree: every package with non-test Go files is
// in the map and imports only what the map allows (test files may import
// more: the system tests in tests/ import everything), and the import table
// of docs/DESIGN.md is the map's.
func TestPackageMap(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string][]string{}
	for _, e := range packageMap {
		allowed[e.pkg] = e.allowed
	}
	var seen []string
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
		if err != nil || len(pkg.GoFiles)+len(pkg.CgoFiles) == 0 {
			return nil // no Go files, or tests only (tests/)
		}
		want, ok := allowed[rel]
		if !ok {
			if strings.HasSuffix(rel, "test") && rel != "kafka/kafkatest" { // test helpers (registrytest)
				return nil
			}
			t.Errorf("package %s is not in the package map (tests/layout packageMap; docs/DESIGN.md)", rel)
			return nil
		}
		seen = append(seen, rel)
		pure, isPure := pureImports[rel]
		for _, imp := range pkg.Imports {
			if (imp == kafkaGo || strings.HasPrefix(imp, kafkaGo+"/")) && !slices.Contains(kafkaGoImporters, rel) {
				t.Errorf("%s imports %s; only %v may (the others use lakewap's kafka package)", rel, imp, kafkaGoImporters)
			}
			dep, ours := strings.CutPrefix(imp, module)
			switch {
			case ours && !slices.Contains(want, dep):
				t.Errorf("%s imports %s; the package map allows %v", rel, dep, want)
			case !ours && isPure && !slices.Contains(pure, imp):
				t.Errorf("%s imports %s; it is pure and may import only %v outside lakewap", rel, imp, pure)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range packageMap {
		if !slices.Contains(seen, e.pkg) {
			t.Errorf("the package map has %s, which the tree does not", e.pkg)
		}
	}
	checkDesignTable(t, filepath.Join(root, "docs", "DESIGN.md"))
}

const (
	tableBegin = "<!-- import table: generated from tests/layout's package map (go test ./tests/layout -update); TestPackageMap fails when they differ -->\n"
	tableEnd   = "<!-- end of the import table -->\n"
)

// importTable renders the package map as docs/DESIGN.md shows it.
func importTable() string {
	var b strings.Builder
	b.WriteString("| package | may import |\n|---|---|\n")
	for _, e := range packageMap {
		deps := "nothing of lakewap"
		if len(e.allowed) > 0 {
			quoted := make([]string, len(e.allowed))
			for i, a := range e.allowed {
				quoted[i] = "`" + a + "`"
			}
			deps = strings.Join(quoted, ", ")
		}
		if e.note != "" {
			deps += "; " + e.note
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", e.pkg, deps)
	}
	return b.String()
}

// checkDesignTable fails unless the import table of the page at path is
// importTable(); with -update it writes it there.
func checkDesignTable(t *testing.T, path string) {
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin := bytes.Index(doc, []byte(tableBegin))
	end := bytes.Index(doc, []byte(tableEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s has no import table between the markers %q and %q", path, tableBegin, tableEnd)
	}
	have := string(doc[begin+len(tableBegin) : end])
	want := importTable()
	if have == want {
		return
	}
	if *update {
		out := slices.Concat(doc[:begin+len(tableBegin)], []byte(want), doc[end:])
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the import table of %s", path)
		return
	}
	t.Errorf("the import table of %s is not the package map's; run go test ./tests/layout -update, or change packageMap.\nhave:\n%s\nwant:\n%s", path, have, want)
}
