package runner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/schemas"
)

func scopedFixture(t *testing.T) *runnerFixture {
	return newRunnerFixtureWith(t, func(c *Config) {
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour, KeepBranch: true,
				TablePaths: []string{"gold/fact/"}, AllowedPaths: []string{"manifests/"}}, n == "billing"
		}
	})
}

func lastEvent(f *runnerFixture) schemas.Event {
	f.notes.mu.Lock()
	defer f.notes.mu.Unlock()
	return f.notes.events[len(f.notes.events)-1]
}

// A sealed commit that changes anything outside the tables and allowed
// paths is not audited or merged: the batch aborts naming the paths.
func TestChangesOutsideTablesAbort(t *testing.T) {
	f := scopedFixture(t)
	f.lake.changed = []string{"gold/fact/p.parquet", "manifests/m.json", "etc/passwd", "_lakefs_actions/lakewap.yaml"}
	f.land(t, "stray-1")
	f.await(t, "stray-1", schemas.TypeBatchAborted)
	ab := lastEvent(f).(schemas.BatchAborted)
	if ab.Reason != schemas.ReasonOutsideTables || !strings.Contains(ab.Detail, "etc/passwd") ||
		!strings.Contains(ab.Detail, "_lakefs_actions/lakewap.yaml") || strings.Contains(ab.Detail, "manifests/") {
		t.Errorf("aborted %+v; want outside_tables naming the two stray paths", ab)
	}
	f.lake.mu.Lock()
	defer f.lake.mu.Unlock()
	if f.lake.merges != 0 {
		t.Errorf("%d merges", f.lake.merges)
	}
}

// A branch with the run's name that the run did not create aborts the
// batch (invalid) and is left alone.
func TestBranchNotCreatedByRunIsNotResumed(t *testing.T) {
	f := scopedFixture(t)
	f.lake.taken = true
	f.land(t, "taken-1")
	f.await(t, "taken-1", schemas.TypeBatchAborted)
	ab := lastEvent(f).(schemas.BatchAborted)
	if ab.Reason != schemas.ReasonInvalid || !strings.Contains(ab.Detail, "not created by this run") || !ab.BranchKept {
		t.Errorf("aborted %+v; want invalid, branch kept", ab)
	}
}

// source_ref must be one of the refs the dataset allows.
func TestSourceRefOutsideAllowedIsInvalid(t *testing.T) {
	f := scopedFixture(t)
	ev := schemas.BatchLanded{BatchID: "src-1", Dataset: "billing", SourceRef: "attacker-branch", ExpectedWrites: []string{"fact"},
		Producer: "t", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	err := f.ingest(t, ev.BatchID, avro(t, ev), 0)
	var p *consumer.PoisonError
	if !errors.As(err, &p) || p.Reason != schemas.ReasonInvalid || !strings.Contains(p.Err.Error(), "source_ref") {
		t.Fatalf("Handle = %v; want a dead letter naming source_ref", err)
	}
	f.await(t, "src-1", schemas.TypeBatchAborted)
	if ab := lastEvent(f).(schemas.BatchAborted); ab.Reason != schemas.ReasonInvalid {
		t.Errorf("aborted %+v", ab)
	}
	f.lake.mu.Lock()
	defer f.lake.mu.Unlock()
	if len(f.lake.branches) != 0 {
		t.Errorf("branches made: %v", f.lake.branches)
	}
}

// BatchLanded's attributes reach the publish commit's metadata; the
// reserved wap. keys stay lakewap's.
func TestAttributesInPublishMeta(t *testing.T) {
	run := Run{BatchID: "b1", Dataset: "billing", SealedCommit: "s1",
		Attributes: map[string]string{"source_system": "erp", "wap.batch_id": "forged", "WAP.Audit": "passed=99", "wap.sealed_commit": "x"}}
	m := publishMeta(run)
	want := map[string]string{"source_system": "erp", MetaBatchID: "b1", MetaDataset: "billing", "wap.sealed_commit": "s1"}
	if len(m) != len(want) {
		t.Errorf("meta = %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("meta[%s] = %q, want %q (all %v)", k, m[k], v, m)
		}
	}
}

// An attribute lakeFS's UI would open as a link on the publish commit
// reaches it only as an http(s) URL, also from a run stored before
// validation refused the others (schemas.UILinkProblem).
func TestPublishMetaCarriesNoScriptLink(t *testing.T) {
	run := Run{BatchID: "b1", Dataset: "billing", SealedCommit: "s1",
		Attributes: map[string]string{"::lakefs::Audit::url[url:ui]": "javascript:alert(document.cookie)",
			"::lakefs::Airflow::url[url:ui]": "https://airflow.example/runs/1"}}
	m := publishMeta(run)
	if _, ok := m["::lakefs::Audit::url[url:ui]"]; ok {
		t.Errorf("meta = %v: a javascript: link lakeFS's UI opens", m)
	}
	if m["::lakefs::Airflow::url[url:ui]"] != "https://airflow.example/runs/1" {
		t.Errorf("meta = %v, want the https link kept", m)
	}
}

// A batch's trace context is in its merge commit's metadata; an attribute
// cannot forge it (wap. keys are lakewap's).
func TestTraceContextInPublishMeta(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	run := Run{BatchID: "b1", Dataset: "billing", SealedCommit: "s1", Trace: schemas.TraceContext{Parent: tp, State: "rojo=1"},
		Attributes: map[string]string{"wap.traceparent": "forged", "wap.tracestate": "forged"}}
	m := publishMeta(run)
	if m[MetaTraceParent] != tp || m[MetaTraceState] != "rojo=1" {
		t.Errorf("meta = %v, want the run's trace context", m)
	}
	run.Trace = schemas.TraceContext{}
	m = publishMeta(run)
	if _, ok := m[MetaTraceParent]; ok {
		t.Errorf("meta of a run without a trace = %v", m)
	}
}

// The audit step diffs the sealed commit once, against the target's head,
// and the audit gets that diff in its request: it does not diff again.
func TestAuditStepDiffsOnceAndHandsTheChanges(t *testing.T) {
	var mu sync.Mutex
	var got []AuditRequest
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour,
				TablePaths: []string{"gold/fact/"}, AllowedPaths: []string{"manifests/"}}, n == "billing"
		}
		c.Auditor = auditFunc(func(_ context.Context, req AuditRequest) (schemas.AuditReport, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req)
			return report(true), nil
		})
	})
	f.lake.mu.Lock()
	f.lake.changed = []string{"gold/fact/p.parquet", "manifests/m.json"}
	f.lake.mu.Unlock()
	f.land(t, "diff-1")
	f.await(t, "diff-1", schemas.TypeBatchPublished)
	f.lake.mu.Lock()
	diffs := f.lake.diffs
	f.lake.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	want := []Change{{Path: "gold/fact/p.parquet", Size: 19}, {Path: "manifests/m.json", Size: 16}}
	if diffs != 1 || len(got) != 1 || !slices.Equal(got[0].Changes, want) || got[0].BaseRef != "head-of-main" {
		t.Errorf("%d diffs, audit requests %+v; want one diff, handed to the one audit against head-of-main as %v", diffs, got, want)
	}
}
