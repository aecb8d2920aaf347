package notify

import (
	"github.com/lakewap/lakewap/schemas"
)

// DefaultMaxMessageBytes is the results topic's maximum message size
// lakewap assumes unless told (Kafka's default message.max.bytes is
// 1048588), with room for the record overhead.
const DefaultMaxMessageBytes = 1000000

// shrink returns ev with less of its audit report, step by step: first
// without sample rows, then with the failed checks only, then without
// check results. ok is false when there is nothing left to drop.
func shrink(ev schemas.Event, step int) (out schemas.Event, ok bool) {
	cut := func(rep schemas.AuditReport) schemas.AuditReport {
		checks := make([]schemas.CheckResult, 0, len(rep.Checks))
		for _, c := range rep.Checks {
			if step >= 3 || step == 2 && c.Status == schemas.StatusPass {
				continue
			}
			c.SampleRows = nil
			checks = append(checks, c)
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
