package auditsource

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/schemas"
)

// lakeFS v1.84.0's merge drops a path one side added whose identity is
// that of the merge-base's next path, which the other side deleted
// (audit/mergehazard.go). On the real server: the foundation holds a.csv
// and z.csv; batch N adds m.csv, a copy of z.csv, and is published; batch
// K, from the same foundation, deletes z.csv. Merged, K would leave main
// with a.csv alone, one row, where the dataset requires two: K's recheck
// onto main must refuse it (merge_hazard naming m.csv), and the merge
// shown to drop m.csv is what it guards against. Before the check the
// recheck passed (main held a, m and z: 3 rows, 2 once z goes) and the
// merge left main failing its audit.
func TestRecheckRefusesAMergeLakeFSWouldDropAPublishedFileFrom(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	two := 2.0
	suite := audit.Suite{Tables: relinkSuite.Tables, Checks: []audit.Check{{Kind: audit.KindRowCount, Table: "t", Min: &two}}}
	up := func(branch, p, c string) {
		t.Helper()
		if err := s.lake.Upload(ctx, "lake", branch, p, strings.NewReader(c)); err != nil {
			t.Fatal(err)
		}
	}
	audit1 := func(e *audit.Engine, ref, base string, onto bool) schemas.AuditReport {
		t.Helper()
		rep, err := e.Run(ctx, audit.Request{Dataset: "d", Suite: suite, Repository: "lake", Ref: ref, BaseRef: base, BaseName: "main", Onto: onto})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	up("main", relinkPrefix+"a.csv", "id,x\n1,a\n")
	up("main", relinkPrefix+"z.csv", "id,x\n2,b\n")
	foundation := s.commit(t, "main", "foundation")
	e := newDeriveEngine(t, s)
	for _, b := range []string{"n", "k"} {
		if _, err := s.lake.EnsureBranch(ctx, "lake", b, foundation); err != nil {
			t.Fatal(err)
		}
	}
	up("n", relinkPrefix+"m.csv", "id,x\n2,b\n")
	sN := s.commit(t, "n", "batch N adds m.csv (a copy of z.csv)")
	resp, err := s.api.DeleteObjectWithResponse(ctx, "lake", "k", &apigen.DeleteObjectParams{Path: relinkPrefix + "z.csv"})
	if err != nil || resp.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v %v", err, resp.StatusCode())
	}
	sK := s.commit(t, "k", "batch K deletes z.csv")
	if rep := audit1(e, sN, foundation, false); !rep.Passed {
		t.Fatalf("batch N refused: %+v", rep.Failed())
	}
	if _, err := s.lake.Merge(ctx, "lake", sN, "main", "publish N", nil); err != nil {
		t.Fatal(err)
	}
	h := l1HeadOf(t, s)

	rep := audit1(e, sK, h, true)
	var hazard []string
	for _, c := range rep.Failed() {
		if c.Kind == audit.KindMergeHazard {
			hazard = append(hazard, c.Observed)
		}
	}
	if rep.Passed || len(hazard) != 1 || !strings.Contains(hazard[0], relinkPrefix+"m.csv") {
		t.Errorf("batch K's recheck onto main: passed=%v, merge hazards %q; want it refused, naming %s", rep.Passed, hazard, relinkPrefix+"m.csv")
	}

	// What it guards against: the merge lakewap no longer makes.
	m, err := s.lake.Merge(ctx, "lake", sK, "main", "publish K anyway", nil)
	if err != nil {
		t.Fatal(err)
	}
	onM, err := s.src.List(ctx, "lake", m, relinkPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(onM, func(o audit.Object) bool { return strings.HasSuffix(o.Path, "/m.csv") }) {
		t.Logf("this lakeFS kept m.csv in the merge: the hazard is gone from its merge")
	} else if audit1(newDeriveEngine(t, s), m, "", false).Passed {
		t.Error("main without m.csv passes row_count >= 2: the scenario does not show the drop")
	}
}
