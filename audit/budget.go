package audit

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/lakewap/lakewap/schemas"
)

// Budgets of a report. A report is stored in the run record (up to three
// times: the run, its result event, the last event sent), sent as a Kafka
// event, put in commit metadata and in a webhook answer, so its size must
// not depend on the data audited.
const (
	// DefaultMaxSampleValueBytes bounds one value of a sample row.
	DefaultMaxSampleValueBytes = 256
	// DefaultMaxReportBytes bounds a whole report (as JSON).
	DefaultMaxReportBytes = 32 << 10
	// maxSampleRowBytes bounds one sample row after its values are clipped
	// (a row of many columns).
	maxSampleRowBytes = 2 << 10
	// maxCheckText bounds a check's observed value and message.
	maxCheckText = 1 << 10
)

// clipReport bounds rep: every sample value to valueBytes, every sample row
// to maxSampleRowBytes, observed values, messages and the mode reason to
// maxCheckText; then,
// while the report is over reportBytes, it drops sample rows (last checks
// first) and finally check results beyond the budget, saying how many.
func clipReport(rep schemas.AuditReport, valueBytes, reportBytes int) schemas.AuditReport {
	rep.ModeReason = schemas.Clip(rep.ModeReason, maxCheckText)
	for i := range rep.Checks {
		c := &rep.Checks[i]
		c.Observed, c.Message = schemas.Clip(c.Observed, maxCheckText), schemas.Clip(c.Message, maxCheckText)
		for j, row := range c.SampleRows {
			c.SampleRows[j] = clipRow(row, valueBytes)
		}
	}
	size := reportSize(rep)
	for i := len(rep.Checks) - 1; i >= 0 && size > reportBytes; i-- {
		c := &rep.Checks[i]
		if n := len(c.SampleRows); n > 0 {
			note := fmt.Sprintf("%d sample row(s) left out: the report is over its %d-byte budget", n, reportBytes)
			if c.Message != "" {
				note = c.Message + "; " + note
			}
			c.SampleRows, c.Message = nil, note
			size = reportSize(rep)
		}
	}
	if size > reportBytes {
		// Keep checks in order until the budget is spent; say how many went.
		keep, used := 0, 200
		for _, c := range rep.Checks {
			b, _ := json.Marshal(c)
			if used+len(b)+1 > reportBytes {
				break
			}
			used += len(b) + 1
			keep++
		}
		if keep < len(rep.Checks) {
			dropped, failed, status := rep.Checks[keep:], 0, schemas.StatusPass
			for _, c := range dropped {
				if c.Status == schemas.StatusFail || c.Status == schemas.StatusError {
					failed, status = failed+1, schemas.StatusFail
				}
			}
			rep.Checks = append(rep.Checks[:keep:keep], schemas.CheckResult{Name: "omitted_checks", Kind: kindReportBudget,
				Severity: SeverityError, Status: status, Observed: fmt.Sprintf("%d more checks, %d failed", len(dropped), failed),
				Message: fmt.Sprintf("left out: the report is over its %d-byte budget", reportBytes)})
		}
	}
	return rep
}

// kindReportBudget is the kind of the entry that stands for the checks a
// report over its budget left out.
const kindReportBudget = "report_budget"

func reportSize(rep schemas.AuditReport) int {
	b, _ := json.Marshal(rep)
	return len(b)
}

// clipRow clips the string values of a JSON object row to valueBytes each,
// keeping the columns in order; a row still over maxSampleRowBytes keeps the
// columns that fit and says how many it left out. A row that is not a JSON
// object is clipped as text.
func clipRow(row string, valueBytes int) string {
	if len(row) <= valueBytes && len(row) <= maxSampleRowBytes {
		return row
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(row)))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return schemas.Clip(row, maxSampleRowBytes)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	left := 0
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return schemas.Clip(row, maxSampleRowBytes)
		}
		key, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return schemas.Clip(row, maxSampleRowBytes)
		}
		if len(v) > valueBytes {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v) // nested: as text
			}
			v, _ = json.Marshal(schemas.Clip(s, valueBytes))
		}
		k, _ := json.Marshal(schemas.Clip(key, valueBytes))
		if out.Len()+len(k)+len(v)+64 > maxSampleRowBytes {
			left++
			continue
		}
		if out.Len() > 1 { // past the '{'
			out.WriteByte(',')
		}
		out.Write(k)
		out.WriteByte(':')
		out.Write(v)
	}
	if left > 0 {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		fmt.Fprintf(&out, `"…":"%d more column(s)"`, left)
	}
	out.WriteByte('}')
	return out.String()
}
