package runner

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// The inputs and reports the runner's tests are made of (the machine's
// tests in package pipeline have their own).

var t0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func report(passed bool) schemas.AuditReport {
	st := schemas.StatusPass
	if !passed {
		st = schemas.StatusFail
	}
	return schemas.AuditReport{Dataset: "billing", Passed: passed, Checks: []schemas.CheckResult{{Name: "billing_id_not_null", Kind: "not_null", Severity: "error", Status: st}}}
}

// policy is DefaultPolicy with change applied.
func policy(change func(*Policy)) Policy {
	p := DefaultPolicy
	change(&p)
	return p
}

func marshal(t *testing.T, r Run) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// awaitRunPublished waits until the runner holds batch of billing
// published, failing the test after 30 seconds.
func (f *runnerFixture) awaitRunPublished(t *testing.T, batch string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r, _ := f.run("billing", batch); r.State != StatePublished; r, _ = f.run("billing", batch) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %s", batch, r.State)
		}
		time.Sleep(time.Millisecond)
	}
}
