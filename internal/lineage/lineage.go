// Package lineage sends OpenLineage run events for the daemon's runs: START
// when a batch lands, COMPLETE when it is published, ABORT or FAIL when it
// stops. The job is the dataset, the run the batch; the input datasets are
// the batch branch's tables at the sealed commit, with the audit's checks
// as the data-quality assertions facet and row counts as the metrics facet;
// the outputs are the target's tables at the merge commit.
//
// Lineage is best effort: events go through a bounded queue to an HTTP
// endpoint (an OpenLineage server such as Marquez) or a Kafka topic, and
// are dropped, and counted, when it is full, an event is over its byte
// budget, or the server does not answer. It never holds a run back.
//
// It imports kafka, pipeline and schemas.
package lineage

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// The OpenLineage spec version and facet versions the events follow.
const (
	SchemaURL     = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
	assertionsURL = "https://openlineage.io/spec/facets/1-0-1/DataQualityAssertionsDatasetFacet.json#/$defs/DataQualityAssertionsDatasetFacet"
	metricsURL    = "https://openlineage.io/spec/facets/1-0-2/DataQualityMetricsInputDatasetFacet.json#/$defs/DataQualityMetricsInputDatasetFacet"
	statsURL      = "https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"
	versionURL    = "https://openlineage.io/spec/facets/1-0-1/DatasetVersionDatasetFacet.json#/$defs/DatasetVersionDatasetFacet"
	errorURL      = "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"
	// Producer names lakewap as the producer of the events and facets.
	Producer = "https://github.com/lakewap/lakewap"
)

// Event types.
const (
	Start    = "START"
	Complete = "COMPLETE"
	Abort    = "ABORT"
	Fail     = "FAIL"
)

// Table is one table of a dataset: its name in checks and its path.
// Columns maps the name of a check of the table on one column (the
// check's name in the report) to that column, the assertion's column.
type Table struct {
	Name, Path string
	Columns    map[string]string
}

// RunEvent is an OpenLineage run event.
type RunEvent struct {
	EventType string    `json:"eventType"`
	EventTime string    `json:"eventTime"`
	Run       Run       `json:"run"`
	Job       Job       `json:"job"`
	Inputs    []Dataset `json:"inputs"`
	Outputs   []Dataset `json:"outputs"`
	Producer  string    `json:"producer"`
	SchemaURL string    `json:"schemaURL"`
}

// Run is the run of one batch.
type Run struct {
	RunID  string         `json:"runId"`
	Facets map[string]any `json:"facets,omitempty"`
}

// Job is the WAP job of one dataset.
type Job struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Facets    map[string]any `json:"facets,omitempty"`
}

// Dataset is a table at a ref: namespace lakefs://<repository>, name
// <ref>/<table path>.
type Dataset struct {
	Namespace    string         `json:"namespace"`
	Name         string         `json:"name"`
	Facets       map[string]any `json:"facets,omitempty"`
	InputFacets  map[string]any `json:"inputFacets,omitempty"`
	OutputFacets map[string]any `json:"outputFacets,omitempty"`
}

func facet(schemaURL string, fields map[string]any) map[string]any {
	fields["_producer"] = Producer
	fields["_schemaURL"] = schemaURL
	return fields
}

// Of returns the event a change of a run from before to after makes, if
// any: START when it lands, COMPLETE, ABORT or FAIL when it ends.
// namespace is the jobs' namespace; tables are the dataset's.
func Of(before, after pipeline.Run, namespace string, tables []Table) (RunEvent, bool) {
	typ := ""
	switch {
	case after.State == pipeline.StateLanded && (before.State == "" || before.State == pipeline.StatePending):
		typ = Start
	case after.State.Terminal() && !before.State.Terminal():
		typ = outcome(after)
	}
	if typ == "" {
		return RunEvent{}, false
	}
	ev := RunEvent{EventType: typ, EventTime: after.UpdatedAt.UTC().Format(time.RFC3339Nano),
		Run:      Run{RunID: RunID(after.Dataset, after.BatchID)},
		Job:      Job{Namespace: namespace, Name: after.Dataset},
		Inputs:   []Dataset{},
		Outputs:  []Dataset{},
		Producer: Producer, SchemaURL: SchemaURL}
	if after.UpdatedAt.IsZero() {
		ev.EventTime = time.Now().UTC().Format(time.RFC3339Nano)
	}
	if typ == Fail && (after.Detail != "" || after.LastError != "") {
		ev.Run.Facets = map[string]any{"errorMessage": facet(errorURL, map[string]any{
			"message": schemas.Clip(after.Reason+": "+strings.TrimSpace(after.Detail+" "+after.LastError), 2000), "programmingLanguage": "Go"})}
	}
	repo := "lakefs://" + after.Repository
	for _, t := range tables {
		in := Dataset{Namespace: repo, Name: after.Branch + "/" + t.Path}
		if after.SealedCommit != "" {
			in.Facets = map[string]any{"version": facet(versionURL, map[string]any{"datasetVersion": after.SealedCommit})}
		}
		if after.Report != nil && typ != Start {
			assertions, rows := checksOf(after.Report, t)
			if len(assertions) > 0 {
				in.Facets = withFacet(in.Facets, "dataQualityAssertions", facet(assertionsURL, map[string]any{"assertions": assertions}))
			}
			if rows != nil {
				in.InputFacets = map[string]any{"dataQualityMetrics": facet(metricsURL, map[string]any{"rowCount": *rows, "columnMetrics": map[string]any{}})}
			}
		}
		ev.Inputs = append(ev.Inputs, in)
		if typ == Complete && after.CommitID != "" {
			out := Dataset{Namespace: repo, Name: after.Target + "/" + t.Path,
				Facets: map[string]any{"version": facet(versionURL, map[string]any{"datasetVersion": after.CommitID})}}
			if _, rows := checksOf(after.Report, t); rows != nil {
				out.OutputFacets = map[string]any{"outputStatistics": facet(statsURL, map[string]any{"rowCount": *rows})}
			}
			ev.Outputs = append(ev.Outputs, out)
		}
	}
	return ev, true
}

// budgetURL is the schema of the run facet lakewap_budget, which says
// what an event over its byte budget left out.
const budgetURL = Producer + "/blob/main/docs/integrations.md"

// leaveOutAssertions is ev with less of its data-quality assertions, for
// an event over its byte budget of max bytes: at step 1 those that
// succeeded, at step 2 all. The run facet lakewap_budget counts what was
// left out and says why.
func leaveOutAssertions(ev RunEvent, step, max int) RunEvent {
	left := 0
	if b, ok := ev.Run.Facets["lakewap_budget"].(map[string]any); ok {
		left, _ = b["assertionsLeftOut"].(int)
	}
	inputs := make([]Dataset, len(ev.Inputs))
	for i, in := range ev.Inputs {
		inputs[i] = in
		f, ok := in.Facets["dataQualityAssertions"].(map[string]any)
		if !ok {
			continue
		}
		as, _ := f["assertions"].([]map[string]any)
		var kept []map[string]any
		for _, a := range as {
			if step == 1 && a["success"] == false {
				kept = append(kept, a)
			}
		}
		left += len(as) - len(kept)
		facets := maps.Clone(in.Facets)
		if len(kept) > 0 {
			facets["dataQualityAssertions"] = facet(assertionsURL, map[string]any{"assertions": kept})
		} else {
			delete(facets, "dataQualityAssertions")
		}
		inputs[i].Facets = facets
	}
	ev.Inputs = inputs
	ev.Run.Facets = withFacet(maps.Clone(ev.Run.Facets), "lakewap_budget", facet(budgetURL, map[string]any{
		"assertionsLeftOut": left,
		"reason":            fmt.Sprintf("the event is over its %d-byte budget (lineage.max_event_bytes)", max)}))
	return ev
}

func withFacet(m map[string]any, k string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[k] = v
	return m
}

// outcome is the event type of a run that ended: published is COMPLETE; a
// batch stopped before its data was judged (cancelled, no writes in time,
// no room) is ABORT; one whose data or publish failed is FAIL.
func outcome(r pipeline.Run) string {
	switch {
	case r.State == pipeline.StatePublished:
		return Complete
	case r.State == pipeline.StateAborted && (r.Reason == schemas.ReasonCancelled || r.Reason == schemas.ReasonWriteTimeout || r.Reason == schemas.ReasonTooManyRuns):
		return Abort
	}
	return Fail
}

// checksOf returns the assertions of table's checks and the rows they
// checked (the most any check counted), nil when none counted.
func checksOf(rep *schemas.AuditReport, table Table) ([]map[string]any, *int64) {
	if rep == nil {
		return nil, nil
	}
	var out []map[string]any
	var rows *int64
	for _, c := range rep.Checks {
		if c.Table != table.Name || c.Status == schemas.StatusSkipped {
			continue
		}
		// A warn-severity check that failed did not succeed either; its
		// severity says it did not block.
		a := map[string]any{"assertion": c.Name, "success": c.Status == schemas.StatusPass, "severity": c.Severity}
		if col := table.Columns[c.Name]; col != "" {
			a["column"] = col
		}
		out = append(out, a)
		if c.RowsChecked != nil && (rows == nil || *c.RowsChecked > *rows) {
			n := *c.RowsChecked
			rows = &n
		}
	}
	return out, rows
}

// RunID is the OpenLineage run id of a batch: a UUID (version 5 layout)
// derived from dataset and batch id, so every event of the batch, from any
// instance, names the same run.
func RunID(dataset, batch string) string {
	sum := sha256.Sum256([]byte("lakewap\x00" + dataset + "\x00" + batch))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
