package lineage

import (
	"regexp"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

func TestEventsOfARun(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	rows := int64(1000)
	tables := []Table{{Name: "billing_fact", Path: "gold/billing_fact/", Columns: map[string]string{"not_null": "id"}}}
	landed := pipeline.Run{BatchID: "b1", Dataset: "billing", Repository: "lake", Branch: "wap-billing-b1", Target: "main",
		State: pipeline.StateLanded, UpdatedAt: now}
	published := landed
	published.State, published.SealedCommit, published.CommitID = pipeline.StatePublished, "s1", "m1"
	published.Report = &schemas.AuditReport{Passed: true, Checks: []schemas.CheckResult{
		{Name: "not_null", Table: "billing_fact", Severity: "error", Status: schemas.StatusPass, RowsChecked: &rows},
		{Name: "currency", Table: "billing_fact", Severity: "warn", Status: schemas.StatusWarn, RowsChecked: &rows}}}
	aborted := published
	aborted.State, aborted.Reason, aborted.CommitID = pipeline.StateAborted, schemas.ReasonAuditFailed, ""
	cancelled := landed
	cancelled.State, cancelled.Reason = pipeline.StateAborted, schemas.ReasonCancelled

	cases := []struct {
		name          string
		before, after pipeline.Run
		want          string
	}{
		{"landed", pipeline.Run{}, landed, Start},
		{"published", landed, published, Complete},
		{"audit failed", landed, aborted, Fail},
		{"cancelled", landed, cancelled, Abort},
		{"no event in between", landed, func() pipeline.Run { r := landed; r.State = pipeline.StateAuditing; return r }(), ""},
		{"repeated terminal", published, published, ""},
	}
	for _, tc := range cases {
		ev, ok := Of(tc.before, tc.after, "lakewap", tables)
		if ok != (tc.want != "") || ev.EventType != tc.want {
			t.Errorf("%s: event %q (%v), want %q", tc.name, ev.EventType, ok, tc.want)
		}
	}
	ev, _ := Of(landed, published, "lakewap", tables)
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(ev.Run.RunID) ||
		ev.Run.RunID != RunID("billing", "b1") || ev.Job.Name != "billing" {
		t.Errorf("run %+v job %+v", ev.Run, ev.Job)
	}
	if len(ev.Inputs) != 1 || ev.Inputs[0].Namespace != "lakefs://lake" || ev.Inputs[0].Name != "wap-billing-b1/gold/billing_fact/" {
		t.Fatalf("inputs %+v", ev.Inputs)
	}
	as := ev.Inputs[0].Facets["dataQualityAssertions"].(map[string]any)["assertions"].([]map[string]any)
	if len(as) != 2 || as[0]["success"] != true || as[1]["success"] != false || as[1]["severity"] != "warn" ||
		as[0]["column"] != "id" || as[1]["column"] != nil {
		t.Errorf("assertions %v", as)
	}
	if ev.Inputs[0].InputFacets["dataQualityMetrics"].(map[string]any)["rowCount"] != int64(1000) {
		t.Errorf("input facets %v", ev.Inputs[0].InputFacets)
	}
	if len(ev.Outputs) != 1 || ev.Outputs[0].Name != "main/gold/billing_fact/" ||
		ev.Outputs[0].Facets["version"].(map[string]any)["datasetVersion"] != "m1" {
		t.Errorf("outputs %+v", ev.Outputs)
	}
}
