package auditsource

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/schemas"
)

// A path outside the suite's tables (an allowed path) that both the
// batch and the target added since the foundation, at different bytes,
// is a conflict to lakeFS unless one side's identity is that of the
// foundation's next path: lakeFS v1.84.0's handleBothKeys compares both
// with that path whatever its name and keeps the other side's. On the
// real server: the foundation holds zz/q (bytes X); another batch adds
// zz/p (bytes Y) and is published; batch K adds zz/p with X. Merged, K
// leaves main with the other batch's zz/p, without its own published
// file and without a conflict. K's recheck must refuse it (merge_hazard
// naming zz/p); before the check looked at paths outside the tables, it
// passed.
func TestRecheckRefusesAnAddedOutsidePathLakeFSWouldResolve(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	up := func(branch, p, c string) {
		t.Helper()
		if err := s.lake.Upload(ctx, "lake", branch, p, strings.NewReader(c)); err != nil {
			t.Fatal(err)
		}
	}
	up("main", relinkPrefix+"a.csv", "id,x\n1,a\n")
	up("main", "zz/q", "marker X\n")
	foundation := s.commit(t, "main", "foundation")
	for _, b := range []string{"n", "k"} {
		if _, err := s.lake.EnsureBranch(ctx, "lake", b, foundation); err != nil {
			t.Fatal(err)
		}
	}
	up("n", "zz/p", "marker Y\n")
	sN := s.commit(t, "n", "batch N adds zz/p")
	if _, err := s.lake.Merge(ctx, "lake", sN, "main", "publish N", nil); err != nil {
		t.Fatal(err)
	}
	h := l1HeadOf(t, s)
	up("k", relinkPrefix+"b.csv", "id,x\n2,b\n")
	up("k", "zz/p", "marker X\n")
	sK := s.commit(t, "k", "batch K adds zz/p with zz/q's bytes")
	changes, err := s.lake.Changes(ctx, "lake", h, sK)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := newDeriveEngine(t, s).Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sK, BaseRef: h,
		BaseName: "main", Onto: true, Changes: Changes(changes)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed || !slices.ContainsFunc(rep.Failed(), func(c schemas.CheckResult) bool {
		return c.Kind == audit.KindMergeHazard && strings.Contains(c.Observed, "zz/p")
	}) {
		t.Errorf("batch K's recheck onto main: passed=%v, failed %+v; want merge_hazard naming zz/p", rep.Passed, rep.Failed())
	}

	// What it guards against: the merge lakewap no longer makes.
	m, err := s.lake.Merge(ctx, "lake", sK, "main", "publish K anyway", nil)
	if err != nil {
		t.Logf("this lakeFS refuses the merge (%v): the hazard is gone from its merge", err)
		return
	}
	var b bytes.Buffer
	if err := s.lake.Download(ctx, "lake", m, "zz/p", &b); err != nil {
		t.Fatal(err)
	}
	if b.String() != "marker Y\n" {
		t.Errorf("main holds zz/p %q after the merge; the scenario expects lakeFS to keep the other batch's", b.String())
	}
}

// A recheck asked without the batch's whole diff (Request.Changes, which
// the runner always gives) used to skip the paths merge_hazard takes from
// that diff: the batch's deletions and additions outside its tables. On
// the real server: the foundation holds zzzz/billing/m (bytes X); another
// dataset publishes zzzz/a/m (X); batch T deletes zzzz/billing/m and holds
// nothing after it. Merged, T drops zzzz/a/m from main (review 10). T's
// recheck with no diff must refuse it as the one with its diff does,
// taking the diff itself.
func TestRecheckWithoutTheBatchesDiffRefusesWhatTheMergeDrops(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	up := func(branch, p, c string) {
		t.Helper()
		if err := s.lake.Upload(ctx, "lake", branch, p, strings.NewReader(c)); err != nil {
			t.Fatal(err)
		}
	}
	up("main", relinkPrefix+"a.csv", "id,x\n1,a\n")
	up("main", "zzzz/billing/m", "marker X\n")
	foundation := s.commit(t, "main", "foundation")
	for _, b := range []string{"n", "k"} {
		if _, err := s.lake.EnsureBranch(ctx, "lake", b, foundation); err != nil {
			t.Fatal(err)
		}
	}
	up("n", "zzzz/a/m", "marker X\n")
	sN := s.commit(t, "n", "another dataset adds zzzz/a/m")
	if _, err := s.lake.Merge(ctx, "lake", sN, "main", "publish N", nil); err != nil {
		t.Fatal(err)
	}
	h := l1HeadOf(t, s)
	up("k", relinkPrefix+"b.csv", "id,x\n2,b\n")
	if resp, err := s.api.DeleteObjectWithResponse(ctx, "lake", "k", &apigen.DeleteObjectParams{Path: "zzzz/billing/m"}); err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v %v", err, resp.StatusCode())
	}
	sK := s.commit(t, "k", "batch T deletes zzzz/billing/m")
	rep, err := newDeriveEngine(t, s).Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sK, BaseRef: h, BaseName: "main", Onto: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed || !slices.ContainsFunc(rep.Failed(), func(c schemas.CheckResult) bool {
		return c.Kind == audit.KindMergeHazard && strings.Contains(c.Observed, "zzzz/a/m")
	}) {
		t.Errorf("batch T's recheck without its diff: passed=%v, failed %+v; want merge_hazard naming zzzz/a/m", rep.Passed, rep.Failed())
	}

	// What it guards against: the merge lakewap no longer makes.
	m, err := s.lake.Merge(ctx, "lake", sK, "main", "publish T anyway", nil)
	if err != nil {
		t.Fatal(err)
	}
	if onM, err := s.src.List(ctx, "lake", m, "zzzz/"); err != nil || len(onM) != 0 {
		t.Logf("this lakeFS kept %+v under zzzz/ (err %v): the hazard is gone from its merge", onM, err)
	}
}

// The other half of a path both sides added outside the tables: the
// target's copy has the identity of the foundation's next path. lakeFS
// v1.84.0's handleBothKeys (equal keys, different identities) compares
// both with that next path whatever its name and writes the batch's entry
// where a three-way merge conflicts. On the real server: the foundation
// holds zz/q (bytes X); another batch N adds zz/p with X and is published;
// batch K adds zz/p with bytes Y. Merged, K replaces N's published zz/p
// with its own, without a conflict: main lacks a file N was announced to
// have published. K's recheck must refuse it (merge_hazard naming zz/p).
func TestRecheckRefusesABothAddedOutsidePathLakeFSResolvesToTheBatch(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	up := func(branch, p, c string) {
		t.Helper()
		if err := s.lake.Upload(ctx, "lake", branch, p, strings.NewReader(c)); err != nil {
			t.Fatal(err)
		}
	}
	up("main", relinkPrefix+"a.csv", "id,x\n1,a\n")
	up("main", "zz/q", "marker X\n")
	foundation := s.commit(t, "main", "foundation")
	for _, b := range []string{"n", "k"} {
		if _, err := s.lake.EnsureBranch(ctx, "lake", b, foundation); err != nil {
			t.Fatal(err)
		}
	}
	up("n", "zz/p", "marker X\n")
	sN := s.commit(t, "n", "batch N adds zz/p with zz/q's bytes")
	if _, err := s.lake.Merge(ctx, "lake", sN, "main", "publish N", nil); err != nil {
		t.Fatal(err)
	}
	h := l1HeadOf(t, s)
	up("k", relinkPrefix+"b.csv", "id,x\n2,b\n")
	up("k", "zz/p", "marker Y\n")
	sK := s.commit(t, "k", "batch K adds zz/p with other bytes")
	changes, err := s.lake.Changes(ctx, "lake", h, sK)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := newDeriveEngine(t, s).Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sK, BaseRef: h,
		BaseName: "main", Onto: true, Changes: Changes(changes)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed || !slices.ContainsFunc(rep.Failed(), func(c schemas.CheckResult) bool {
		return c.Kind == audit.KindMergeHazard && strings.Contains(c.Observed, "zz/p")
	}) {
		t.Errorf("batch K's recheck onto main: passed=%v, failed %+v; want merge_hazard naming zz/p", rep.Passed, rep.Failed())
	}

	// What it guards against: the merge lakewap no longer makes.
	m, err := s.lake.Merge(ctx, "lake", sK, "main", "publish K anyway", nil)
	if err != nil {
		t.Logf("this lakeFS refuses the merge (%v): the hazard is gone from its merge", err)
		return
	}
	var b bytes.Buffer
	if err := s.lake.Download(ctx, "lake", m, "zz/p", &b); err != nil {
		t.Fatal(err)
	}
	if b.String() != "marker Y\n" {
		t.Errorf("main holds zz/p %q after the merge; the scenario expects lakeFS to keep batch K's without a conflict", b.String())
	}
}
