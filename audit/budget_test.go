package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lakewap/lakewap/schemas"
)

// Sample rows of huge values (the 600 KB failing report) come out
// of the real engine clipped per value and per report, still JSON objects
// with their columns in order.
func TestRunClipsSampleRows(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/billing/part-2.parquet",
		"SELECT NULL::BIGINT AS id, * EXCLUDE (id) REPLACE (repeat('x', 200000) AS status) FROM ("+billingRows(2001, 5)+")")
	e := newEngine(t, src, "")
	rep := audit(t, e, "b1",
		Check{Name: "ids", Kind: KindNotNull, Table: "billing", Column: "id"},
		Check{Name: "custom", Kind: KindSQL, Table: "billing", SQL: "SELECT id, status, status AS again FROM billing WHERE id IS NULL"})
	b, _ := json.Marshal(rep)
	if len(b) > DefaultMaxReportBytes {
		t.Errorf("report is %d bytes, budget %d", len(b), DefaultMaxReportBytes)
	}
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusFail || len(c.SampleRows) == 0 {
			t.Fatalf("check %s: %+v, want a failure with sample rows", c.Name, c)
		}
		for _, row := range c.SampleRows {
			var obj map[string]any
			if err := json.Unmarshal([]byte(row), &obj); err != nil {
				t.Fatalf("sample row of %s is not JSON: %v: %.200s", c.Name, err, row)
			}
			st, _ := obj["status"].(string)
			if len(st) > DefaultMaxSampleValueBytes || !strings.HasPrefix(st, "xxx") || !strings.Contains(st, "bytes clipped") {
				t.Errorf("status value of %s has %d bytes: %.80q", c.Name, len(st), st)
			}
			if !strings.HasPrefix(row, `{"id":null`) {
				t.Errorf("columns out of order: %.80s", row)
			}
		}
	}
}

// Over the report budget, sample rows go first (the last checks' first),
// then check results, counted in an omitted_checks result.
func TestClipReportBudget(t *testing.T) {
	rep := schemas.AuditReport{Dataset: "d"}
	for i := range 200 {
		c := schemas.CheckResult{Name: fmt.Sprintf("check_%03d", i), Kind: "sql", Severity: "error", Status: schemas.StatusFail,
			Observed: strings.Repeat("o", 5000)}
		for j := range 5 {
			c.SampleRows = append(c.SampleRows, fmt.Sprintf(`{"n":%d,"v":"%s"}`, j, strings.Repeat("v", 100)))
		}
		rep.Checks = append(rep.Checks, c)
	}
	const budget = 64 << 10
	got := clipReport(rep, 64, budget)
	if n := reportSize(got); n > budget {
		t.Fatalf("clipped report %d bytes, budget %d", n, budget)
	}
	last := got.Checks[len(got.Checks)-1]
	if last.Name != "omitted_checks" || last.Status != schemas.StatusFail || !strings.Contains(last.Observed, "failed") {
		t.Errorf("last result %+v, want the omitted_checks summary", last)
	}
	if len(got.Checks[0].Observed) > maxCheckText {
		t.Errorf("observed not clipped: %d bytes", len(got.Checks[0].Observed))
	}
	// A small report is left as it is.
	small := schemas.AuditReport{Checks: []schemas.CheckResult{{Name: "a", SampleRows: []string{`{"a":1}`}}}}
	if c := clipReport(small, 64, budget); len(c.Checks) != 1 || c.Checks[0].SampleRows[0] != `{"a":1}` {
		t.Errorf("small report changed: %+v", c)
	}
	// Rows that are not JSON objects are clipped as text.
	if r := clipRow(strings.Repeat("z", 5000), 64); len(r) > maxSampleRowBytes {
		t.Errorf("non-object row kept %d bytes", len(r))
	}
}

// The report's mode reason is held to a check's text budget: it quotes
// errors and commits (why an audit that could have been incremental was
// full), and the results sink can drop checks, not it.
func TestClipReportBoundsModeReason(t *testing.T) {
	rep := schemas.AuditReport{Dataset: "d", Mode: ModeFull, ModeReason: "the batch's foundation could not be read: " + strings.Repeat("é", 20000)}
	got := clipReport(rep, 64, DefaultMaxReportBytes)
	if n := len(got.ModeReason); n > maxCheckText || !strings.Contains(got.ModeReason, "clipped") || !utf8.ValidString(got.ModeReason) {
		t.Errorf("mode reason of %d bytes: %.60q…", n, got.ModeReason)
	}
}
