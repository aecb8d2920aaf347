package runner

import (
	"context"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
)

// A run stored by a version before Run.AuditedOnto (no audited_onto, no
// onto_recorded) of a batch not audited against its branch point may hold
// the verdict of an Onto audit: the seal itself was never audited. After a
// restart on this version, with the target moved back onto the seal's
// merge-base (a hard reset: the look finds base == head), the publish
// must recheck it before the merge, not take the verdict for the seal's.
// A run this version recorded (OntoRecorded) as judging the seal itself, or
// one of a batch from its branch point, is not rechecked onto an unmoved
// target.
func TestCrash64RunWithoutAuditedOntoIsRecheckedOntoAMovedBackTarget(t *testing.T) {
	commits := []string{"base"} // Published: base == head
	for _, tt := range []struct {
		name    string
		run     func(pipeline.Run) pipeline.Run
		recheck bool
	}{
		{"older record, batch of another source", func(r pipeline.Run) pipeline.Run { r.Source = "staging"; return r }, true},
		{"older record, no branch point", func(r pipeline.Run) pipeline.Run { r.Source = "main"; return r }, true},
		{"older record, from its branch point", func(r pipeline.Run) pipeline.Run { r.Source, r.BranchFrom = "main", "f0"; return r }, false},
		{"this version's record of the seal judged", func(r pipeline.Run) pipeline.Run { r.Source, r.OntoRecorded = "staging", true; return r }, false},
	} {
		older := historyRun()
		older.OntoRecorded = false // as a version before audited_onto stored it
		lake := &historyLake{commits: commits}
		aud := &firstFailing{commits: commits, k: 0} // the seal onto base fails
		r := historyRunner(lake, aud)
		in := r.publish(context.Background(), tt.run(older), nil)
		switch in := in.(type) {
		case pipeline.Collided:
			if !tt.recheck || in.SealedCommit != "s1" || len(lake.merges) > 0 {
				t.Errorf("%s: %+v, merges %v; want merged without a recheck", tt.name, in, lake.merges)
			}
		case pipeline.Merged:
			if tt.recheck {
				t.Errorf("%s: merged %+v (merges %v, %d audits) without a recheck; want rechecked onto the head and aborted", tt.name, in, lake.merges, aud.audits)
			}
		default:
			t.Errorf("%s: %T %+v", tt.name, in, in)
		}
		if !tt.recheck && aud.audits != 0 {
			t.Errorf("%s: %d audits; want none (the verdict stands)", tt.name, aud.audits)
		}
	}
}
