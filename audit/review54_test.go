package audit

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// TestHookTakesTheRevertsAuditWhenTheHeadDidNotMove (review 54): lakewap
// lands a revert as a merge of its scratch revert commit, which its
// runner audited onto the target's head (Service.Recheck). When the head
// has not moved since, the merge leaves exactly that commit, and the
// hook's judgment of it ran the same audit a second time: the recheck's
// passing report is kept under the scratch commit and the head, the hook
// looked under the commit and the branch's head as a plain audit's. Now
// the recheck answers the hook's audit of lakewap's own merge whose first
// parent is the head it was audited onto and whose source holds that head
// (Ancestry), as it answers the merge commit of a publish (MergeOf). The
// ids are the parents lakeFS gives for the merge in progress, the batch
// time is the one lakewap wrote on its own merge, the suites are the
// service's, fixed for its life, and the report is in its memory: nothing
// a writer sends. Every other case is still audited: the head moved
// (lakeFS writes the merge commit onto the new head), a person's merge of
// the same commit, a merge whose source the hook cannot tell holds the
// head (no Ancestry), another batch time. Before, the first case ran 2
// audits, not 1.
func TestHookTakesTheRevertsAuditWhenTheHeadDidNotMove(t *testing.T) {
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, moved, scratch := hex("1"), hex("2"), hex("3")
	at := time.Date(2026, 12, 7, 1, 2, 3, 456789012, time.UTC)
	revertMeta := func(at time.Time) map[string]string {
		return map[string]string{schemas.MetaRevertedBatchID: "b1", schemas.MetaDataset: "customers", schemas.MetaBatchTime: at.Format(time.RFC3339Nano)}
	}
	for _, tc := range []struct {
		name      string
		head      string // main's head when the merge is judged
		committer string
		meta      map[string]string
		ancestry  bool // the hook can tell whether the source holds the head
		hookRuns  int  // audits the hook's call runs
	}{
		{"the head did not move", head, "lakewap", revertMeta(at), true, 0},
		{"the head moved", moved, "lakewap", revertMeta(at), true, 1},
		{"a person's merge of the same commit", head, "ana", revertMeta(at), true, 1},
		{"no ancestry to tell what the merge leaves", head, "lakewap", revertMeta(at), false, 1},
		{"another batch time", head, "lakewap", revertMeta(at.Add(time.Nanosecond)), true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &verdictRunner{pass: true}
			heads := map[string]string{"main": tc.head}
			s, err := NewService(ServiceOptions{Engine: eng, Concurrency: 1, Budget: time.Minute,
				Datasets: map[string]Dataset{"customers": {Repository: "repo", Target: "main", Suite: Suite{Checks: []Check{{Name: "configured"}}}}},
				Head:     func(_ context.Context, _, ref string) (string, error) { return heads[ref], nil }})
			if err != nil {
				t.Fatal(err)
			}
			// The runner's audit of the revert: the scratch commit onto the
			// head it was made from.
			if _, err := s.Recheck(context.Background(), Request{Dataset: "customers", Repository: "repo", Ref: scratch, BaseRef: head, BatchTime: at}); err != nil {
				t.Fatal(err)
			}
			merge := hex("9")
			book := mergeBook{heads: heads, commits: map[string]MergeCommit{
				merge: {Parents: []string{tc.head, scratch}, Committer: tc.committer, Metadata: tc.meta},
			}}
			opts := PreMergeOptions{Guards: s, Runner: s, Merges: book, OwnCommitter: "lakewap"}
			if tc.ancestry {
				// The scratch commit's parent is the head it was audited onto.
				opts.Ancestry = ancestryFunc(func(_, ref, branch string) (bool, error) { return ref == scratch && heads[branch] == head, nil })
			}
			h, err := NewPreMergeHandler(opts)
			if err != nil {
				t.Fatal(err)
			}
			if status, ans := postHook(t, h, callFor(scratch, merge)); status != http.StatusOK {
				t.Fatalf("status %d: %v", status, ans.Summary)
			}
			if got := eng.runs - 1; got != tc.hookRuns {
				t.Errorf("the hook's call ran %d audits, want %d", got, tc.hookRuns)
			}
		})
	}
}
