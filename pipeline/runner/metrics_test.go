package runner

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/pipeline"
)

// TestRunsPastDeadlineCountsStuckRunsPerDataset: what the
// LakewapRunsStuckPastDeadline alert watches. In-flight runs whose deadline
// passed count; finished runs, runs before their deadline and runs without
// one do not; every configured dataset has a series, 0 when none is stuck.
func TestRunsPastDeadlineCountsStuckRunsPerDataset(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	runs := []pipeline.Run{
		{BatchID: "a", Dataset: "billing", State: pipeline.StateAuditing, Deadline: now.Add(-time.Minute)},
		{BatchID: "b", Dataset: "billing", State: pipeline.StateAwaitingWrites, Deadline: now.Add(-time.Second)},
		{BatchID: "c", Dataset: "billing", State: pipeline.StateAwaitingWrites, Deadline: now.Add(time.Minute)},
		{BatchID: "d", Dataset: "billing", State: pipeline.StateAborted, Deadline: now.Add(-time.Hour)},
		{BatchID: "e", Dataset: "orders", State: pipeline.StatePublishing},
		{BatchID: "f", Dataset: "orders", State: pipeline.StatePending, Deadline: now},
	}
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg, []string{"billing", "orders", "events"}, func() []pipeline.Run { return runs }, func() time.Time { return now }); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "lakewap_runs_past_deadline" {
			continue
		}
		for _, m := range f.Metric {
			got[m.Label[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"billing": 2, "orders": 0, "events": 0}
	if !maps.Equal(got, want) {
		t.Errorf("lakewap_runs_past_deadline = %v, want %v", got, want)
	}
}
