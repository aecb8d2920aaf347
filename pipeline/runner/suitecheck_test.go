package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
)

// stillLake is a target that did not move since the batch's snapshot:
// its head is the batch's merge-base c0.
type stillLake struct{ *historyLake }

func (l stillLake) Published(context.Context, string, string, string, time.Time) (pipeline.Publication, error) {
	return pipeline.Publication{Head: "c0", Base: "c0"}, nil
}

// digesting is firstFailing that names its suites by a digest.
type digesting struct {
	*firstFailing
	digest string
}

func (a digesting) SuitesDigest(dataset string) string { return a.digest }

// A batch whose verdict was reached under other suites than those in force
// (Run.Suites: a restart, or another instance, with another config) is
// rechecked before its merge, onto a target that did not move too: a
// violation aborts it naming the check and the suite change (no commit to
// blame, no bisection), a pass merges it with the recheck's report and the
// digest in force. Under the same digest the publish audits nothing, as
// before; a run stored without a digest (an older lakewap) is rechecked.
func TestPublishRechecksAVerdictOfOtherSuites(t *testing.T) {
	for _, tt := range []struct {
		name             string
		recorded, force  string
		fails            bool
		audits           int
		merges, wantType string
	}{
		{"same suites", "d1", "d1", true, 0, "[s1->main]", "Merged"},
		{"changed, passes", "d1", "d2", false, 1, "[s1->main]", "Merged"},
		{"changed, fails", "d1", "d2", true, 1, "[]", "Collided"},
		{"stored without a digest", "", "d2", true, 1, "[]", "Collided"},
	} {
		lake := stillLake{&historyLake{commits: []string{"c0"}}}
		k := 1 // c0 passes
		if tt.fails {
			k = 0
		}
		aud := digesting{&firstFailing{commits: []string{"c0"}, k: k}, tt.force}
		r := historyRunner(lake, aud)
		run := historyRun()
		run.Suites = tt.recorded
		in := r.publish(context.Background(), run, nil)
		if got := strings.TrimPrefix(fmt.Sprintf("%T", in), "pipeline."); got != tt.wantType {
			t.Fatalf("%s: %T %+v; want %s", tt.name, in, in, tt.wantType)
		}
		switch in := in.(type) {
		case pipeline.Merged:
			if tt.audits == 0 && (in.Report != nil || in.Suites != "") {
				t.Errorf("%s: %+v; want the audit's verdict kept", tt.name, in)
			}
			if tt.audits > 0 && (in.Report == nil || in.Report.Ref != "s1" || in.Suites != tt.force) {
				t.Errorf("%s: %+v; want the recheck's report under suites %s", tt.name, in, tt.force)
			}
		case pipeline.Collided:
			if in.Commit != "" || !in.SuitesChanged || in.Head != "c0" || strings.Join(in.Checks, ",") != "id_unique" {
				t.Errorf("%s: %+v; want a failure of id_unique onto c0 for the suite change, no commit named", tt.name, in)
			}
		}
		if aud.audits != tt.audits || fmt.Sprint(lake.merges) != tt.merges {
			t.Errorf("%s: %d audits, merges %v; want %d and %s", tt.name, aud.audits, lake.merges, tt.audits, tt.merges)
		}
	}
}

// The audit step records the digest of the suites its verdict was reached
// under, and the machine keeps it with the report, within its budget.
func TestAuditedRecordsTheSuites(t *testing.T) {
	m := pipeline.NewMachine(pipeline.Policy{})
	now := time.Now()
	run := historyRun()
	run.State, run.Report, run.SealedCommit = pipeline.StateAuditing, nil, ""
	for _, tt := range []struct{ given, want string }{
		{"d1", "d1"},
		{strings.Repeat("x", pipeline.MaxSuitesBytes+1), ""},
	} {
		o := m.Apply(run, pipeline.Audited{SealedCommit: "s1", Report: *historyRun().Report, Suites: tt.given}, now)
		if o.Run.Suites != tt.want || o.Run.State != pipeline.StatePublishing {
			t.Errorf("Audited with suites of %d bytes: %+v; want publishing with suites %q", len(tt.given), o.Run, tt.want)
		}
	}
	// A collision for a suite change says so.
	run = historyRun()
	o := m.Apply(run, pipeline.Collided{SealedCommit: "s1", Head: "c0", Checks: []string{"at_most_999_rows"}, SuitesChanged: true}, now)
	if o.Run.State != pipeline.StateAborted || !strings.Contains(o.Run.Detail, "fails at_most_999_rows under the checks in force now: the suites changed since its audit") {
		t.Errorf("collision for a suite change: %+v", o.Run)
	}
}
