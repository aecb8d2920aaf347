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

// TestMerge64RunlessBranchWithFreshUncommittedWritesIsKept: a branch
// without a run was judged by its head commit's age alone. A producer that
// makes its batch's branch itself (lakewap resumes a branch made at the
// source's head) from a main whose last commit is 200 hours old, and
// stages its files there before lakewap has read its BatchLanded (a
// consumer lagging, a restart), had the branch deleted as abandoned with
// its writes: lakewap then makes the branch afresh, and the batch lacks
// what was staged before (a batch of several files publishes the rest).
// Staged changes are the writer's: a run-less branch whose uncommitted
// changes are younger than the abandon age is kept. A branch without them
// is still deleted.
func TestMerge64RunlessBranchWithFreshUncommittedWritesIsKept(t *testing.T) {
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
	must(t, lake.Upload(ctx, "lake", "main", "gold/seed.csv", strings.NewReader("a\n1\n")))
	d := now.Add(-200 * time.Hour).Unix()
	resp, err := api.CommitWithResponse(ctx, "lake", "main", &apigen.CommitParams{}, apigen.CommitJSONRequestBody{Message: "seed", Date: &d})
	must(t, err)
	if resp.StatusCode() != http.StatusCreated {
		t.Fatalf("commit on main: HTTP %d %s", resp.StatusCode(), resp.Body)
	}
	for _, b := range []string{"wap-billing-premade", "wap-billing-stale"} {
		_, err := lake.EnsureBranch(ctx, "lake", b, "main")
		must(t, err)
	}
	// The producer's first file, staged on its branch.
	must(t, lake.Upload(ctx, "lake", "wap-billing-premade", "gold/billing_fact/batch=premade/part-0.parquet", strings.NewReader("PAR1")))
	j, err := janitor.New(janitor.Config{
		Lake:           lake,
		Runs:           func(context.Context) ([]pipeline.Run, error) { return nil, nil },
		Datasets:       []janitor.Dataset{{Name: "billing", Repository: "lake", Target: "main", AbortedRetention: 72 * time.Hour}},
		AbandonedAfter: 24 * time.Hour,
		Now:            func() time.Time { return now },
	})
	must(t, err)
	ds, err := j.Sweep(ctx, false)
	must(t, err)
	if got := branchNames(t, ctx, lake); !slices.Equal(got, []string{"main", "wap-billing-premade"}) {
		t.Errorf("after the sweep branches are %v, want main and the branch with fresh staged writes (the one without deleted): %+v", got, ds)
	}
}
