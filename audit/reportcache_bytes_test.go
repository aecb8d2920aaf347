package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// The passing reports the service keeps are bounded by their bytes (as
// JSON), not only by their count: before, 4,096 reports of
// audit.max_report_bytes (32 KiB by default, and as large as the config
// says) were kept, 128 MiB as JSON; a report at that budget is made by an
// operator's suite with many checks, and anyone who may merge into a
// guarded branch can have the hook keep one per merge. The oldest go first.
func TestReportCacheIsBoundedByBytes(t *testing.T) {
	c := newReportCache(reportCacheSize)
	check := schemas.CheckResult{Name: "c", Kind: "row_count", Status: schemas.StatusPass, Observed: strings.Repeat("x", 1000)}
	rep := schemas.AuditReport{Passed: true}
	for range 30 {
		rep.Checks = append(rep.Checks, check)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	n := 2 * reportCacheBytes / len(b)
	for i := range n {
		c.put(reportKey{"lake", "billing", fmt.Sprint("r", i), "base", 1, ""}, rep)
	}
	kept := 0
	for _, r := range c.m {
		b, _ := json.Marshal(r.rep)
		kept += len(b)
	}
	if kept > reportCacheBytes {
		t.Errorf("%d reports of %d bytes kept, %d bytes in all; want at most %d", len(c.m), len(b), kept, reportCacheBytes)
	}
	if _, ok := c.get(reportKey{"lake", "billing", fmt.Sprint("r", n-1), "base", 1, ""}); !ok {
		t.Error("the newest report was not kept")
	}
	if _, ok := c.get(reportKey{"lake", "billing", "r0", "base", 1, ""}); ok {
		t.Error("the oldest report was kept past the budget")
	}
}
