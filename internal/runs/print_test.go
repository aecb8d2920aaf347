package runs_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// A failing check's sample rows, observed value and message come from the
// audited data: `lakewap audit` must not hand their escape sequences to the
// operator's terminal.
func TestAuditTableEscapesDataControls(t *testing.T) {
	evil := "\x1b]0;owned\x07 \u009b2J \u202e"
	rep := schemas.AuditReport{Dataset: "billing", Ref: strings.Repeat("a", 64), Checks: []schemas.CheckResult{
		{Name: "ids", Table: "billing_fact", Severity: "error", Status: schemas.StatusFail, Observed: evil, Threshold: "0",
			SampleRows: []string{"billing_id=" + evil}},
		{Name: "sql", Table: "billing_fact", Severity: "error", Status: schemas.StatusError, Message: "bad value " + evil},
	}}
	var out bytes.Buffer
	runs.WriteReport(&out, rep, "main", "")
	for _, r := range out.String() {
		if r != '\n' && r != '\t' && runs.TerminalDangerous(r) {
			t.Fatalf("raw %U in the audit table: %q", r, out.String())
		}
	}
	if !strings.Contains(out.String(), `billing_id=\x1b]0;owned\x07`) {
		t.Errorf("sample row not shown escaped: %q", out.String())
	}
}

// What the daemon answers an operator command carries text from events,
// lakeFS and the audited data: printed, and as its JSON line, it reaches the
// operator's terminal escaped.
func TestOperatorAnswerEscapesControls(t *testing.T) {
	evil := "\x1b]0;owned\x07 \u009b2J \u0085 \u202e"
	req := schemas.BatchCancelled{BatchID: "b1", Dataset: "billing"}
	rep := schemas.AuditReport{Ref: strings.Repeat("a", 64), Checks: []schemas.CheckResult{{Name: "c", Status: schemas.StatusFail, Observed: evil, Threshold: evil}}}
	for _, ans := range []schemas.Event{
		schemas.BatchAborted{EventID: "e1", BatchID: "b1" + evil, Dataset: "billing", Reason: schemas.ReasonInvalid, Detail: evil, Branch: "wap-b1", Report: &rep},
		schemas.RequestRefused{EventID: "e2", BatchID: "b1", Dataset: "billing", Reason: "unknown", Detail: evil},
		schemas.BatchFailed{EventID: "e3", BatchID: "b1", Dataset: "billing", Error: evil},
	} {
		var out bytes.Buffer
		runs.WriteAnswer(&out, req, ans)
		for _, r := range out.String() {
			if r != '\n' && runs.TerminalDangerous(r) {
				t.Errorf("%s: raw %U in the printed answer: %q", ans.EventType(), r, out.String())
				break
			}
		}
	}
}

// The janitor's table carries lakeFS's error text for a delete that failed
// and the run's state read from the store: escaped like every other output.
func TestJanitorDecisionsEscapeControls(t *testing.T) {
	evil := "\x1b]0;owned\x07 \u009b2J \u202e"
	ds := []janitor.Decision{{Repository: "lake", Branch: "wap-b1", BatchID: "b1", State: pipeline.State("aborted" + evil),
		Delete: true, Why: janitor.WhyAbortedExpired, Err: "delete branch wap-b1: 500 " + evil}}
	var out bytes.Buffer
	if err := runs.WriteDecisions(&out, ds, false, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r != '\n' && runs.TerminalDangerous(r) {
			t.Fatalf("raw %U in the janitor's table: %q", r, out.String())
		}
	}
	if !strings.Contains(out.String(), `500 \x1b]0;owned\x07`) {
		t.Errorf("the error not shown escaped: %q", out.String())
	}
}

// lakewap janitor prints as the janitor decides (writers can make a million
// branches): a DecisionTable holds at most a block of rows, so most of them
// are out before the sweep ends.
func TestDecisionTablePrintsAsItGoes(t *testing.T) {
	const n = 1000
	var out bytes.Buffer
	table := runs.NewDecisionTable(&out, true, false, time.Now())
	for i := range n {
		table.Add(janitor.Decision{Repository: "lake", Branch: fmt.Sprintf("wap-b%d", i), Delete: true, Why: janitor.WhyAbandoned})
		table.Add(janitor.Decision{Repository: "lake", Branch: fmt.Sprintf("wap-k%d", i), Why: "kept"}) // not shown without all
	}
	if rows := strings.Count(out.String(), "\n"); rows < n-256 {
		t.Errorf("%d rows printed before the sweep ended; want at least %d (a table holds at most a block)", rows, n-256)
	}
	if err := table.Close(2 * n); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(out.String(), "would delete  lake/wap-b"); rows != n {
		t.Errorf("%d rows; want %d: %q", rows, n, out.String()[:200])
	}
	if !strings.HasSuffix(out.String(), fmt.Sprintf("would delete %d of %d wap- branch(es)\n", n, 2*n)) {
		t.Errorf("no count at the end: %q", out.String()[out.Len()-100:])
	}
}
