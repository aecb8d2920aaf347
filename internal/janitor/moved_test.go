package janitor_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// movedAfterListing is the lakeFS client whose branch listing lets a
// writer act (moved) as soon as it has been read: between the janitor's
// listing and its judgement.
type movedAfterListing struct {
	*lakefs.Client
	moved func()
}

func (m movedAfterListing) ListBranches(ctx context.Context, repo, prefix string) ([]lakefs.Branch, error) {
	bs, err := m.Client.ListBranches(ctx, repo, prefix)
	if err == nil && m.moved != nil {
		m.moved()
	}
	return bs, err
}

// TestMerge63BranchWhoseHeadMovedAfterTheListingIsKept: the janitor judged
// each branch by the head its listing gave. A writer who committed on a
// branch after the listing (a fix on an aborted batch's kept branch, to be
// retried; new work on a branch without a run) had it deleted by the age
// of the head it had moved from: both branches below, whose heads were
// 100 hours old when listed and a second old when judged, were deleted
// with the writer's commits. lakeFS offers no delete conditional on the
// head, so the janitor reads the head again just before deleting, and
// keeps a branch whose head is not the one it judged.
func TestMerge63BranchWhoseHeadMovedAfterTheListingIsKept(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a lakeFS server")
	}
	stack := devstack.StartForTest(t, devstack.Options{Repository: "lake"})
	lake, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
	must(t, err)
	api, err := apigen.NewClientWithResponses(stack.LakeFSEndpoint+"/api/v1", apigen.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
		return nil
	}))
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	now := time.Now()
	commit := func(branch, path string, date time.Time) {
		t.Helper()
		must(t, lake.Upload(ctx, "lake", branch, path, strings.NewReader("a\n1\n")))
		d := date.Unix()
		resp, err := api.CommitWithResponse(ctx, "lake", branch, &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: "commit", Date: &d})
		must(t, err)
		if resp.StatusCode() != http.StatusCreated {
			t.Fatalf("commit on %s: HTTP %d %s", branch, resp.StatusCode(), resp.Body)
		}
	}
	commit("main", "gold/seed.csv", now.Add(-200*time.Hour))
	branches := []string{"wap-billing-aborted", "wap-billing-norun"}
	for _, b := range branches {
		_, err := lake.EnsureBranch(ctx, "lake", b, "main")
		must(t, err)
		commit(b, "gold/"+b+"/old.csv", now.Add(-100*time.Hour))
	}
	runs := []pipeline.Run{{BatchID: "aborted", Dataset: "billing", Repository: "lake", Branch: "wap-billing-aborted",
		State: pipeline.StateAborted, StateSince: now.Add(-100 * time.Hour)}}
	j, err := janitor.New(janitor.Config{
		Lake: movedAfterListing{Client: lake, moved: func() {
			for _, b := range branches {
				commit(b, "gold/"+b+"/new.csv", time.Now())
			}
		}},
		Runs:           func(context.Context) ([]pipeline.Run, error) { return runs, nil },
		Datasets:       []janitor.Dataset{{Name: "billing", Repository: "lake", Target: "main", AbortedRetention: 72 * time.Hour}},
		AbandonedAfter: 24 * time.Hour,
		Now:            func() time.Time { return now },
	})
	must(t, err)
	ds, err := j.Sweep(ctx, false)
	must(t, err)
	for _, d := range ds {
		if d.Deleted {
			t.Errorf("%s deleted (%s) though its head moved after the listing: %+v", d.Branch, d.Why, d)
		}
	}
	if got := branchNames(t, ctx, lake); !slices.Equal(got, []string{"main", "wap-billing-aborted", "wap-billing-norun"}) {
		t.Errorf("after the sweep branches are %v, want both branches kept", got)
	}
}

// TestMerge63RetriedRunsBranchIsNotDeletedByItsOldState: the janitor read
// the runs once, before judging every branch; an operator's retry of an
// aborted run past its retention in the meantime (the run auditing again
// on its kept branch, where the writer may have staged a fix: the head
// does not move) had the branch deleted by the run's old state, and the
// retried run lost its branch. The runs of branches to delete are read
// again before the delete.
func TestMerge63RetriedRunsBranchIsNotDeletedByItsOldState(t *testing.T) {
	old := time.Now().Add(-100 * time.Hour)
	lake := &fakeLake{branches: []lakefs.Branch{{Name: "wap-billing-x", CommitID: "c1"}}, head: old}
	aborted := pipeline.Run{BatchID: "x", Dataset: "billing", Repository: "lake", Branch: "wap-billing-x",
		State: pipeline.StateAborted, Reason: "audit_failed", KeepBranch: true, StateSince: old}
	reads, retried := 0, true
	j, err := janitor.New(janitor.Config{Lake: lake,
		Runs: func(context.Context) ([]pipeline.Run, error) {
			reads++
			if reads == 1 || !retried {
				return []pipeline.Run{aborted}, nil
			}
			r := aborted // the retry, taken while the sweep judged
			r.State, r.Reason, r.Retries, r.StateSince = pipeline.StateAuditing, "", 1, time.Now()
			return []pipeline.Run{r}, nil
		},
		Datasets: []janitor.Dataset{{Name: "billing", Repository: "lake", AbortedRetention: 72 * time.Hour}}})
	must(t, err)
	ds, err := j.Sweep(context.Background(), false)
	must(t, err)
	if len(lake.deleted) != 0 {
		t.Errorf("deleted %v, the branch of a run retried during the sweep: %+v", lake.deleted, ds)
	}
	// Unretried, it is deleted.
	retried = false
	ds, err = j.Sweep(context.Background(), false)
	must(t, err)
	if !slices.Equal(lake.deleted, []string{"wap-billing-x"}) {
		t.Errorf("deleted %v, want the expired aborted run's branch: %+v", lake.deleted, ds)
	}
}
