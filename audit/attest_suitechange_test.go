package audit

import (
	"slices"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A publish is attested with the dataset's suite as the config holds it
// then, and the report of its audit. A restart with a changed suite
// between the two (a check added in front) made the attestation read the
// report by position: the new check was attested as passed by the old
// first check's result, under the new suite's digest, so the next audit
// took it as passing on the unchanged rows and read only the batch's. A
// check is attested as passed only by a result of that check.
func TestAttestationReadsTheResultOfTheSameCheck(t *testing.T) {
	old := Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Kind: KindNotNull, Table: "t", Column: "id"}}}
	rep := schemas.AuditReport{Passed: true, Checks: []schemas.CheckResult{{Name: old.Checks[0].ID(), Status: schemas.StatusPass}}}
	now := old
	now.Checks = []Check{{Kind: KindUnique, Table: "t", Column: "id"}, old.Checks[0]}
	a := NewAttestation("d", now, rep, "sealed", "against")
	if !a.AllNotPassed && !slices.Contains(a.NotPassed, 0) {
		t.Errorf("attestation %+v: the unique check, which did not run, is attested as passed", a)
	}
	if a := NewAttestation("d", old, rep, "sealed", "against"); a.AllNotPassed || len(a.NotPassed) != 0 {
		t.Errorf("attestation of the suite audited %+v: want every check passed", a)
	}
}

// passingReport is a report of every check of s passing, in order.
func passingReport(s Suite) schemas.AuditReport {
	rep := schemas.AuditReport{Passed: true}
	for _, c := range s.Checks {
		rep.Checks = append(rep.Checks, schemas.CheckResult{Name: c.ID(), Kind: c.Kind, Table: c.Table, Status: schemas.StatusPass})
	}
	return rep
}
