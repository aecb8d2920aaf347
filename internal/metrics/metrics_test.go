package metrics

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
	c := PastDeadline{Runs: func() []pipeline.Run { return runs }, Datasets: []string{"billing", "orders", "events"},
		Now: func() time.Time { return now }}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.Metric {
			got[m.Label[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"billing": 2, "orders": 0, "events": 0}
	if !maps.Equal(got, want) {
		t.Errorf("lakewap_runs_past_deadline = %v, want %v", got, want)
	}
}

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	BuildInfo(reg, "v1.2.3", "0123abc", "go1.26.8")
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || fams[0].GetName() != "lakewap_build_info" || len(fams[0].Metric) != 1 {
		t.Fatalf("gathered %v, want lakewap_build_info alone", fams)
	}
	m := fams[0].Metric[0]
	got := map[string]string{}
	for _, l := range m.Label {
		got[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": "v1.2.3", "revision": "0123abc", "goversion": "go1.26.8"}
	if !maps.Equal(got, want) || m.GetGauge().GetValue() != 1 {
		t.Errorf("lakewap_build_info labels %v value %v, want %v and 1", got, m.GetGauge().GetValue(), want)
	}
}
