package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
)

// bigDiffLake answers every diff with the same n changes.
type bigDiffLake struct {
	prepLake
	changes []pipeline.Change
}

func (l *bigDiffLake) Changes(context.Context, string, string, string) ([]pipeline.Change, error) {
	return l.changes, nil
}

// The diffs publishes take while they wait for their turn are bounded by
// their changes in all, not only by their count: before, 4096 waiting
// publishes of batches changing 200,000 objects each kept 819,200,000
// changes (about 80 GB). Past the bound a diff is not kept and the turn
// takes its own, as when none was prepared.
func TestPreparedDiffsAreBoundedByTheirChanges(t *testing.T) {
	l := &bigDiffLake{changes: make([]pipeline.Change, maxPreparedChanges/4+1)}
	for i := range l.changes {
		l.changes[i] = pipeline.Change{Path: fmt.Sprint("gold/t/", i), Size: 1}
	}
	r := historyRunner(l, &changesOf{})
	runs := make([]pipeline.Run, 12)
	for i := range runs {
		runs[i] = historyRun()
		runs[i].BatchID, runs[i].SealedCommit = fmt.Sprint("b", i), fmt.Sprint("s", i)
		r.prepareDiff(context.Background(), runs[i])
	}
	kept, ready := 0, []pipeline.Run{}
	for _, run := range runs {
		r.dmu.Lock()
		f := r.diffs[diffKey(run)]
		r.dmu.Unlock()
		<-f.done
		if ch, ok := r.preparedDiff(run, "f1"); ok {
			kept += len(ch)
			ready = append(ready, run)
		}
	}
	if kept > maxPreparedChanges || len(ready) != 3 {
		t.Fatalf("%d prepared diffs kept, of %d changes in all; want the 3 that fit, at most %d changes", len(ready), kept, maxPreparedChanges)
	}
	// A dropped diff gives its room back.
	r.dropDiff(ready[0])
	r.dropDiff(ready[1])
	late := historyRun()
	late.BatchID, late.SealedCommit = "late", "s-late"
	r.prepareDiff(context.Background(), late)
	r.dmu.Lock()
	f := r.diffs[diffKey(late)]
	r.dmu.Unlock()
	<-f.done
	if _, ok := r.preparedDiff(late, "f1"); !ok {
		t.Error("a diff prepared after two were dropped was not kept")
	}
}

// heldBytes is what changes hold of paths.
func heldBytes(changes []pipeline.Change) (n int) {
	for _, c := range changes {
		n += len(c.Path)
	}
	return n
}

// The diffs kept for publishes are bounded by their bytes too: a path is
// the batch's writer's to choose, up to the 1,024 bytes the lakeFS client
// lets through (lakefs.MaxPathBytes). Before, 12 waiting publishes of
// 16,666 changes each, within 200,000 changes in all, kept 205 MB of
// paths; a change is counted as its path and 64 bytes, 32 MiB in all.
func TestPreparedDiffsAreBoundedByTheirBytes(t *testing.T) {
	long := strings.Repeat("x", 1000)
	l := &bigDiffLake{changes: make([]pipeline.Change, maxPreparedChanges/12)}
	for i := range l.changes {
		l.changes[i] = pipeline.Change{Path: fmt.Sprintf("gold/t/%06d-", i) + long, Size: 1}
	}
	r := historyRunner(l, &changesOf{})
	kept, ready := 0, 0
	for i := range 12 {
		run := historyRun()
		run.BatchID, run.SealedCommit = fmt.Sprint("b", i), fmt.Sprint("s", i)
		r.prepareDiff(context.Background(), run)
		r.dmu.Lock()
		f := r.diffs[diffKey(run)]
		r.dmu.Unlock()
		<-f.done
		if ch, ok := r.preparedDiff(run, "f1"); ok {
			kept += heldBytes(ch)
			ready++
		}
	}
	if kept > 32<<20 || ready == 0 {
		t.Fatalf("%d prepared diffs kept, of %d bytes of paths in all; want at most %d bytes, and some kept", ready, kept, 32<<20)
	}
}

// As TestPreparedDiffsAreBoundedByTheirBytes, for the audit step's diffs
// kept for their publishes: 1,024 diffs of 195 changes of 1,024-byte paths
// each were within 1,024 diffs and 200,000 changes, and held 204 MB.
func TestAuditedDiffsAreBoundedByTheirBytes(t *testing.T) {
	var a auditedDiffs
	diff := make([]pipeline.Change, 195)
	for i := range diff {
		diff[i] = pipeline.Change{Path: fmt.Sprintf("gold/t/%04d-", i) + strings.Repeat("x", 1014), Size: 1}
	}
	for i := range maxAuditedDiffs {
		a.put("lake", fmt.Sprint("s", i), "h", diff)
	}
	held := 0
	for _, d := range a.m {
		held += heldBytes(d.changes)
	}
	if held > 32<<20 || len(a.m) == 0 {
		t.Fatalf("%d audited diffs kept, %d bytes of paths; want at most %d bytes, and some kept", len(a.m), held, 32<<20)
	}
	if _, _, ok := a.take("lake", fmt.Sprint("s", maxAuditedDiffs-1)); !ok {
		t.Error("the newest diff was not kept")
	}
}
