package status

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// The page's answer has a byte budget, as JSON and as HTML: runs are shown
// newest first until it is spent, the rest counted as omitted. Before, it
// listed up to 500 runs whatever their size: producers whose batches fail
// many checks with long messages (each report up to 32 KiB, more once
// escaped: a quote is 5 bytes of HTML) made each answer tens of megabytes.
func TestRunsAnswerIsBounded(t *testing.T) {
	var runs []pipeline.Run
	msg := strings.Repeat(`"'<>&`, 200) // 1,000 bytes, each escaped in JSON or HTML
	for i := range MaxRuns {
		rep := &schemas.AuditReport{Dataset: "billing"}
		for j := range 10 {
			rep.Checks = append(rep.Checks, schemas.CheckResult{Name: fmt.Sprintf("check_%d", j), Severity: "error",
				Status: schemas.StatusFail, Observed: msg, Message: msg})
		}
		at := now.Add(-time.Duration(i) * time.Minute)
		runs = append(runs, pipeline.Run{BatchID: fmt.Sprintf("b-%03d", i), Dataset: "billing", Repository: "lake",
			State: pipeline.StateAborted, Reason: schemas.ReasonAuditFailed, LastError: msg, LandedAt: at, StateSince: at, UpdatedAt: at, Report: rep})
	}
	h := Handler(Options{Runs: func() []pipeline.Run { return runs }, Now: func() time.Time { return now }})
	for _, accept := range []string{"application/json", "text/html"} {
		rec := get(t, h, "/runs", map[string]string{"Accept": accept})
		body := rec.Body.String()
		if n := len(body); n > MaxAnswerBytes+16<<10 {
			t.Errorf("%s answer of %d bytes, more than the budget %d and the page around it", accept, n, MaxAnswerBytes)
		}
		if accept == "application/json" {
			var pg Page
			if err := json.Unmarshal(rec.Body.Bytes(), &pg); err != nil {
				t.Fatalf("JSON answer does not decode: %v", err)
			}
			if len(pg.Runs) == 0 || pg.Omitted == 0 || len(pg.Runs)+pg.Omitted != MaxRuns || pg.Runs[0].BatchID != "b-000" {
				t.Errorf("JSON answer shows %d runs (first %q), omits %d; want the newest, the rest counted", len(pg.Runs), pg.Runs[0].BatchID, pg.Omitted)
			}
		} else if !strings.Contains(body, "more not shown") {
			t.Errorf("HTML answer does not say runs were left out")
		}
	}
}
