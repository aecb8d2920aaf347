package runner

import (
	"context"
	"fmt"
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
