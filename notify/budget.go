package notify

import (
	"fmt"

	"github.com/lakewap/lakewap/schemas"
)

// DefaultMaxMessageBytes is the results topic's maximum message size
// lakewap assumes unless told (Kafka's default message.max.bytes is
// 1048588), with room for the record overhead.
const DefaultMaxMessageBytes = 1000000

// MinMaxMessageBytes is the least maximum message size the results sink
// takes (kafka.results_max_message_bytes): it holds every result event at
// its largest once shrink has taken all it can (a BranchReady naming 256
// expected writes is about 35 KB), so no event is refused on every attempt.
const MinMaxMessageBytes = 64 << 10

// The result that sums up the checks left out of a report, as the audit's
// report budget names it (audit/budget.go): a consumer finds both the same
// way.
const (
	omittedName = "omitted_checks"
	omittedKind = "report_budget"
)

// shrink returns ev with less of its audit report, step by step: first
// without sample rows, then with the failed checks only, then without
// check results. It says what it left out, why being the reason: a check
// that lost its sample rows says how many in its message, and the checks
// left out are summed up in one omitted_checks result (how many, how many
// failed; an omitted_checks of the audit's budget is counted in). ok is
// false when there is nothing left to drop.
func shrink(ev schemas.Event, step int, why string) (out schemas.Event, ok bool) {
	cut := func(rep schemas.AuditReport) schemas.AuditReport {
		checks := make([]schemas.CheckResult, 0, len(rep.Checks)+1)
		var summary *schemas.CheckResult
		omitted, failed, dropped := 0, 0, 0
		for _, c := range rep.Checks {
			if c.Name == omittedName && c.Kind == omittedKind {
				var n, f int
				if _, err := fmt.Sscanf(c.Observed, "%d more checks, %d failed", &n, &f); err == nil {
					omitted, failed = omitted+n, failed+f
					summary = &c
					continue
				}
			}
			if step >= 3 || step == 2 && c.Status == schemas.StatusPass {
				omitted, dropped = omitted+1, dropped+1
				if c.Status == schemas.StatusFail || c.Status == schemas.StatusError {
					failed++
				}
				continue
			}
			if n := len(c.SampleRows); n > 0 {
				note := fmt.Sprintf("%d sample row(s) left out: %s", n, why)
				if c.Message != "" {
					note = c.Message + "; " + note
				}
				c.SampleRows, c.Message = nil, note
			}
			checks = append(checks, c)
		}
		switch {
		case dropped > 0:
			status := schemas.StatusPass
			if failed > 0 {
				status = schemas.StatusFail
			}
			checks = append(checks, schemas.CheckResult{Name: omittedName, Kind: omittedKind, Severity: "error", Status: status,
				Observed: fmt.Sprintf("%d more checks, %d failed", omitted, failed), Message: "left out: " + why})
		case summary != nil:
			checks = append(checks, *summary)
		}
		rep.Checks = checks
		return rep
	}
	switch e := ev.(type) {
	case schemas.BatchPublished:
		e.Report = cut(e.Report)
		return e, step <= 3
	case schemas.BatchAborted:
		if e.Report == nil {
			return ev, false
		}
		rep := cut(*e.Report)
		e.Report = &rep
		return e, step <= 3
	}
	return ev, false
}
