package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// notMetrics are the lakewap_ words of docs/ and deploy/ that are not
// metric names: the pre-merge hook's id, the metadata of lakewap's Slack
// messages, the OpenLineage run facet. (Secret files, /run/secrets/lakewap_*,
// are told apart by their slash.)
var notMetrics = []string{
	"lakewap_audit",         // deploy/lakefs-actions: the hook's id
	"lakewap_batch",         // Slack message metadata (notify)
	"lakewap_batch_details", // Slack message metadata (notify)
	"lakewap_budget",        // OpenLineage run facet
}

// retiredMetric is docs/operations.md's table of renamed metrics and
// labels: a row's first cell names what no longer exists.
var retiredMetric = regexp.MustCompile("(?m)^\\| `lakewap_[^`]*` \\| ")

var (
	docMetric  = regexp.MustCompile(`(^|[^/\w])(lakewap_[a-z0-9_]*[a-z0-9])\b(\{[^}\n]*\})?`)
	docMatcher = regexp.MustCompile(`^\s*([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=|$)`)
)

// metricNamesIn reports every lakewap_ metric src names that inv (the
// inventory) lacks, and every label a name{label,...} gives it that it has
// not. A histogram's _bucket (with its le), _count and _sum are its own.
func metricNamesIn(inv map[string]inventoryLine, where, src string) []string {
	src = retiredMetric.ReplaceAllString(src, "| ")
	var problems []string
	for _, m := range docMetric.FindAllStringSubmatch(src, -1) {
		name := m[2]
		if slices.Contains(notMetrics, name) {
			continue
		}
		line, ok := inv[name]
		extra := []string{}
		if !ok {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if base, cut := strings.CutSuffix(name, suffix); cut {
					if l, found := inv[base]; found && (l.typ == "HISTOGRAM" || (l.typ == "SUMMARY" && suffix != "_bucket")) {
						line, ok = l, true
						if suffix == "_bucket" {
							extra = append(extra, "le")
						}
					}
				}
			}
		}
		if !ok {
			problems = append(problems, where+": names "+name+", which lakewap does not register (tests/"+metricsInventory+")")
			continue
		}
		if m[3] == "" {
			continue
		}
		for _, part := range strings.Split(strings.Trim(m[3], "{}"), ",") {
			l := docMatcher.FindStringSubmatch(part)
			if l == nil || l[1] == "job" || l[1] == "instance" || l[1] == "__name__" {
				continue
			}
			if !slices.Contains(line.labels, l[1]) && !slices.Contains(extra, l[1]) {
				problems = append(problems, where+": "+name+" has no label "+l[1]+" (it has "+strings.Join(line.labels, ",")+")")
			}
		}
	}
	return problems
}

// TestDocsNameOnlyRegisteredMetrics checks every lakewap_ metric (and the
// label names in name{...}) that docs/ (the runbook in operations.md
// included), README.md and deploy/ (alert rules and their promtool tests,
// the Grafana dashboard, the Helm chart) name against the inventory of
// every metric the daemon registers, testdata/metrics.txt, which
// TestMetricsInventory holds to the registry's descriptors: a metric
// renamed in code, or a name misspelt in a rule or a runbook, fails here
// even where no series of it exists after a test run.
// CHANGELOG.md is history and names retired metrics; it is not read.
func TestDocsNameOnlyRegisteredMetrics(t *testing.T) {
	src, err := os.ReadFile(metricsInventory)
	must(t, err)
	inv := parseInventory(t, string(src))
	// The check finds what it is meant to find.
	if p := metricNamesIn(inv, "probe", "see `lakewap_no_such_total` and lakewap_runs_total{no_such_label}"); len(p) != 2 {
		t.Fatalf("the check found %d of the 2 problems of its probe: %v", len(p), p)
	}
	files := []string{"../README.md"}
	for _, root := range []string{"../docs", "../deploy"} {
		must(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return err
		}))
	}
	named := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		must(t, err)
		named += len(docMetric.FindAllString(string(b), -1))
		for _, p := range metricNamesIn(inv, strings.TrimPrefix(f, "../"), string(b)) {
			t.Error(p)
		}
	}
	if named < 100 {
		t.Errorf("docs/ and deploy/ name lakewap_ metrics only %d times: is the walk reading them?", named)
	}
}
