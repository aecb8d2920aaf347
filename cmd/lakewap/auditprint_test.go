package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/internal/runs"
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
	printAuditTable(&out, rep, "main", "")
	for _, r := range out.String() {
		if r != '\n' && r != '\t' && runs.TerminalDangerous(r) {
			t.Fatalf("raw %U in the audit table: %q", r, out.String())
		}
	}
	if !strings.Contains(out.String(), `billing_id=\x1b]0;owned\x07`) {
		t.Errorf("sample row not shown escaped: %q", out.String())
	}
}
