package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

// writeAuditConfig writes e's config as a YAML file for the CLI, with
// lakeFS at endpoint.
func writeAuditConfig(t *testing.T, e *e2e, endpoint string) string {
	t.Helper()
	datasets := map[string]any{}
	for name, d := range e.cfg.Datasets {
		datasets[name] = map[string]any{"repository": d.Repository, "target": d.Target, "tables": d.Tables, "checks": d.Checks}
	}
	dir := t.TempDir()
	doc := map[string]any{
		"kafka":    map[string]any{"brokers": e.cfg.Kafka.Brokers, "create_topics": false},
		"lakefs":   map[string]any{"endpoint": endpoint, "access_key_id": e.cfg.LakeFS.AccessKeyID, "secret_access_key": e.cfg.LakeFS.SecretAccessKey, "timeout": "5s"},
		"audit":    map[string]any{"work_dir": filepath.Join(dir, "audit"), "cache_dir": filepath.Join(dir, "cache"), "threads": 1},
		"datasets": datasets,
	}
	b, err := yaml.Marshal(doc)
	must(t, err)
	p := filepath.Join(dir, "lakewap.yaml")
	must(t, os.WriteFile(p, b, 0o600))
	return p
}

// TestAuditCommand runs lakewap audit against main and a kept bad branch
// of the embedded stack, as a table and as JSON, and checks its exit codes.
func TestAuditCommand(t *testing.T) {
	e := startE2E(t, nil)
	if ev := e.runBatch(t, "cli-good", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("good batch: %+v", ev)
	}
	ab, ok := e.runBatch(t, "cli-bad", harness.BadBillingRows).(schemas.BatchAborted)
	if !ok || !ab.BranchKept {
		t.Fatalf("bad batch: %+v", ab)
	}
	cfg := writeAuditConfig(t, e, e.cfg.LakeFS.Endpoint)

	t.Run("main against its previous commit passes", func(t *testing.T) {
		code, out, errOut := runCLI(t, "audit", "-config", cfg, "-dataset", "billing", "-ref", "main", "-base", "main~1")
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, want := range [][]string{
			{"CHECK", "TABLE", "SEVERITY", "STATUS", "OBSERVED", "THRESHOLD", "DURATION"},
			{"billing_id_not_null", "billing_fact", "error", "PASS", "0 rows with a null in billing_id, customer_id of 1000"},
			{"has_rows", "billing_fact", "error", "PASS", "1000 rows", "at least 1 rows"},
			{"known_currency", "warn", "PASS"},
			{"PASSED: 5 passed, 0 failed, 0 warned"},
		} {
			if !containsLine(out, want...) {
				t.Errorf("no line with %q in:\n%s", want, out)
			}
		}
	})

	t.Run("main against itself has an empty batch", func(t *testing.T) {
		// The default base is the target: main's batch against main is empty.
		code, out, _ := runCLI(t, "audit", "--config", cfg, "--dataset", "billing", "--ref", "main")
		if code != 1 || !containsLine(out, "has_rows", "FAIL", "0 rows") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})

	t.Run("bad branch fails with samples", func(t *testing.T) {
		code, out, errOut := runCLI(t, "audit", "-config", cfg, "-dataset", "billing", "-ref", ab.Branch)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
		}
		if !containsLine(out, "billing_id_not_null", "FAIL", "40 rows with a null") || !strings.Contains(out, "FAIL billing_id_not_null:\n  {") ||
			!containsLine(out, "FAILED: 4 passed, 1 failed") {
			t.Errorf("table:\n%s", out)
		}
	})

	t.Run("json", func(t *testing.T) {
		code, out, errOut := runCLI(t, "audit", "-config", cfg, "-dataset", "billing", "-ref", ab.Branch, "-json")
		if code != 1 {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		var rep schemas.AuditReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("not an AuditReport: %v\n%s", err, out)
		}
		head, err := e.Lake.GetCommit(t.Context(), "lake", ab.Branch)
		must(t, err)
		failed := rep.Failed()
		if rep.Passed || rep.Dataset != "billing" || rep.Ref != head.ID || len(rep.Checks) != 5 || len(failed) != 1 ||
			failed[0].Name != "billing_id_not_null" || len(failed[0].SampleRows) == 0 {
			t.Errorf("report %+v", rep)
		}
	})

	down := writeAuditConfig(t, e, "http://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"missing ref", []string{"-config", cfg, "-dataset", "billing", "-ref", "no-such-branch"}, `ref "no-such-branch" not found`},
		{"missing base", []string{"-config", cfg, "-dataset", "billing", "-ref", "main", "-base", "gone"}, `base ref "gone"`},
		{"unknown dataset", []string{"-config", cfg, "-dataset", "orders", "-ref", "main"}, `dataset "orders" is not in`},
		{"lakeFS unreachable", []string{"-config", down, "-dataset", "billing", "-ref", "main"}, `cannot read ref "main"`},
		{"no ref", []string{"-config", cfg, "-dataset", "billing"}, "-dataset and -ref are required"},
		{"bad config", []string{"-config", "/nonexistent.yaml", "-dataset", "billing", "-ref", "main"}, "no such file"},
		{"bad flag", []string{"-config", cfg, "-dataset", "billing", "-ref", "main", "-jsn"}, "flag provided but not defined"},
		{"bad batch time", []string{"-config", cfg, "-dataset", "billing", "-ref", "main", "-batch-time", "yesterday"}, "not RFC 3339"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"audit"}, tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and %q", code, errOut, out, tc.msg)
			}
		})
	}
}
