package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// bigReport is a report near the audit's budget (audit.max_report_bytes,
// 32 KiB), of checks that fail or pass as passed says.
func bigReport(passed bool) *schemas.AuditReport {
	rep := &schemas.AuditReport{Dataset: "billing", Ref: strings.Repeat("c", 64), Passed: passed, ModeReason: strings.Repeat("m", 1024)}
	status := schemas.StatusPass
	if !passed {
		status = schemas.StatusFail
	}
	for i := 0; ; i++ {
		c := schemas.CheckResult{Name: fmt.Sprintf("check_%03d", i), Kind: "sql", Table: "fact", Severity: "error", Status: status,
			Observed: strings.Repeat("o", 1000), Message: strings.Repeat("g", 1000)}
		rep.Checks = append(rep.Checks, c)
		if b, _ := json.Marshal(rep); len(b) > 30<<10 {
			return rep
		}
	}
}

// A batch at the bounds of every input (64 attributes of 1 KiB, 256
// expected writes of 128 bytes, producer and source ref at their bounds),
// audited with reports at the audit's budget (the audit's and the
// recheck's) and publishing onto 8 commits lakewap did not attest (of ids
// of 64 KiB: lakeFS's createCommitRecord takes a writer's), with its
// audit attempts' seals, suites digest and the head an Onto audit judged
// (audited_onto, onto_recorded) at their bounds, fits
// its run record at every step: the publish is recorded as published, not refused over
// the budget, and the record is within runner.max_run_bytes.
func TestLargestPublishedRunFitsItsBudget(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	attrs := map[string]string{}
	for i := range schemas.MaxAttributes {
		attrs[fmt.Sprintf("%03d", i)+strings.Repeat("k", schemas.MaxWriteNameLen-3)] = strings.Repeat("v", schemas.MaxTextLen)
	}
	var writes []string
	for i := range schemas.MaxExpectedWrites {
		writes = append(writes, fmt.Sprintf("%03d", i)+strings.Repeat("w", schemas.MaxWriteNameLen-3))
	}
	batch := strings.Repeat("b", schemas.MaxBatchIDLen)
	l := Landed{Event: schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: writes, Attributes: attrs,
		Producer: strings.Repeat("p", schemas.MaxTextLen), SourceRef: strings.Repeat("s", schemas.MaxRefLen), OccurredAt: t0},
		Spec: DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: 600e9}, Branch: schemas.BranchName("billing", batch)}
	var changes []schemas.UnattestedChange
	for i := range 2 * MaxChanges {
		changes = append(changes, schemas.UnattestedChange{EventID: fmt.Sprintf("%032d", i), Kind: schemas.ChangeUnattestedCommit,
			BatchID: batch, Dataset: "billing", Repository: "lake", TargetRef: "main", CommitID: fmt.Sprintf("%03d", i) + strings.Repeat("f", 64<<10),
			Committer: strings.Repeat("c", 600), Message: strings.Repeat("m", 600), Detail: strings.Repeat("d", 900),
			Suite: strings.Repeat("s", 32), PublishedCommitID: strings.Repeat("e", 64), OccurredAt: t0})
	}
	inputs := []Input{l, BranchCreated{}}
	for _, w := range writes {
		inputs = append(inputs, WriteDone{Event: schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: w, OccurredAt: t0}})
	}
	// The audit's attempts' seals (MaxSeals ids of MaxCommitIDBytes), the
	// suites' digest (MaxSuitesBytes) and the head an Onto audit judged
	// (AuditedOnto, MaxCommitIDBytes), each at its bound.
	inputs = append(inputs, AuditBegun{})
	for i := range MaxSeals + 2 {
		inputs = append(inputs, Sealed{Commit: fmt.Sprintf("%03d", i) + strings.Repeat("s", MaxCommitIDBytes-3)})
	}
	inputs = append(inputs, Audited{SealedCommit: strings.Repeat("a", MaxCommitIDBytes), Report: *bigReport(true),
		Suites: strings.Repeat("d", MaxSuitesBytes), Onto: strings.Repeat("o", MaxCommitIDBytes)},
		Merged{CommitID: strings.Repeat("9", 64), Report: bigReport(true), Suites: strings.Repeat("e", MaxSuitesBytes), Changes: changes})
	var r Run
	var size, largest int
	for i, in := range inputs {
		o := m.Apply(r, in, t0)
		o, b, err := m.Fit(o, t0)
		if err != nil {
			t.Fatal(err)
		}
		if o.Refused != nil {
			t.Fatalf("input %d (%T) refused: %s", i, in, o.Refused.Detail)
		}
		r, size = o.Run, len(b)
		largest = max(largest, size)
		if size > DefaultPolicy.MaxRunBytes {
			t.Errorf("input %d (%T): record of %d bytes, over %d", i, in, size, DefaultPolicy.MaxRunBytes)
		}
		if _, ok := in.(Audited); ok && (len(r.Seals) != MaxSeals || r.AuditedOnto != strings.Repeat("o", MaxCommitIDBytes) || !r.OntoRecorded || len(r.Suites) != MaxSuitesBytes) {
			t.Errorf("after the audit the record holds %d seals, audited_onto %q, onto_recorded %v, suites %q; want every field at its bound",
				len(r.Seals), r.AuditedOnto, r.OntoRecorded, r.Suites)
		}
	}
	// The partition's floor stamped on it (the runner's raiseFloor) fits too.
	r.Floor = t0.Add(-3600e9)
	o, b, err := m.Fit(Outcome{Run: r, Changed: true}, t0)
	if err != nil || o.Refused != nil || !o.Run.Floor.Equal(r.Floor) {
		t.Fatalf("with the floor: %v, refused %+v, floor %v", err, o.Refused, o.Run.Floor)
	}
	r, size = o.Run, len(b)
	if r.State != StatePublished || size > DefaultPolicy.MaxRunBytes {
		t.Errorf("run %s, record of %d bytes; want published within %d", r.State, size, DefaultPolicy.MaxRunBytes)
	}
	t.Logf("run record of %d bytes, %d at most on the way", size, largest)
}
