package janitor_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// TestJanitorOnRealLakeFS judges branches of every kind on the real lakeFS
// server. The clock is moved forward instead of waiting: lakeFS stamps
// commits with the real time, so "now + 100h" makes every head commit
// 100 hours old.
func TestJanitorOnRealLakeFS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a lakeFS server")
	}
	stack := devstack.StartForTest(t, devstack.Options{Repository: "lake"})
	lake, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	real := time.Now()
	now := real.Add(100 * time.Hour)

	// A commit on main, so that branches have a head commit with a date.
	must(t, lake.Upload(ctx, "lake", "main", "gold/seed.csv", strings.NewReader("a\n1\n")))
	_, err = lake.Commit(ctx, "lake", "main", "seed", nil)
	must(t, err)

	runs := []pipeline.Run{
		{BatchID: "old", Dataset: "billing", Repository: "lake", Branch: "wap-billing-old", State: pipeline.StateAborted, StateSince: real.Add(-time.Hour)},
		{BatchID: "recent", Dataset: "billing", Repository: "lake", Branch: "wap-billing-recent", State: pipeline.StateAborted, StateSince: now.Add(-50 * time.Hour)},
		{BatchID: "failed", Dataset: "billing", Repository: "lake", Branch: "wap-billing-failed", State: pipeline.StateFailed, StateSince: real},
		{BatchID: "live", Dataset: "billing", Repository: "lake", Branch: "wap-billing-live", State: pipeline.StateAwaitingWrites, StateSince: real.Add(-200 * time.Hour)},
		{BatchID: "auditing", Dataset: "billing", Repository: "lake", Branch: "wap-billing-auditing", State: pipeline.StateAuditing, StateSince: real.Add(-200 * time.Hour)},
		{BatchID: "pub", Dataset: "billing", Repository: "lake", Branch: "wap-billing-pub", State: pipeline.StatePublished, StateSince: real},
		// Same branch name in another repository: its run must not
		// protect or doom the branch in "lake".
		{BatchID: "elsewhere", Dataset: "billing", Repository: "other", Branch: "wap-billing-orphan", State: pipeline.StateAwaitingWrites},
	}
	branches := []string{"wap-billing-old", "wap-billing-recent", "wap-billing-failed", "wap-billing-live",
		"wap-billing-auditing", "wap-billing-pub", "wap-billing-orphan", "wap-prod", "feature-x"}
	for _, b := range branches {
		_, err := lake.EnsureBranch(ctx, "lake", b, "main")
		must(t, err)
	}
	// A run's branch with a commit of its own, as aborted batches have.
	must(t, lake.Upload(ctx, "lake", "wap-billing-old", "gold/x.csv", strings.NewReader("a\n2\n")))
	_, err = lake.Commit(ctx, "lake", "wap-billing-old", "bad batch", nil)
	must(t, err)

	reg := prometheus.NewRegistry()
	j, err := janitor.New(janitor.Config{
		Lake: lake,
		Runs: func(context.Context) ([]pipeline.Run, error) { return runs, nil },
		Datasets: []janitor.Dataset{
			{Name: "billing", Repository: "lake", Target: "main", AbortedRetention: 72 * time.Hour},
			// A dataset publishing to a wap- branch: that branch is never a candidate.
			{Name: "prod", Repository: "lake", Target: "wap-prod"},
		},
		AbandonedAfter: 24 * time.Hour,
		Now:            func() time.Time { return now },
		Registerer:     reg,
	})
	must(t, err)

	want := map[string]string{ // branch -> why, for those to delete
		"wap-billing-old":    janitor.WhyAbortedExpired,
		"wap-billing-failed": janitor.WhyAbortedExpired,
		"wap-billing-pub":    janitor.WhyPublished,
		"wap-billing-orphan": janitor.WhyAbandoned,
	}
	keep := []string{"main", "feature-x", "wap-prod", "wap-billing-recent", "wap-billing-live", "wap-billing-auditing"}

	// Dry run: the same verdicts, nothing deleted.
	dry, err := j.Sweep(ctx, true)
	must(t, err)
	checkDecisions(t, dry, want, false)
	if got := branchNames(t, ctx, lake); !slices.Equal(got, sorted(append(slices.Clone(branches), "main"))) {
		t.Fatalf("after the dry run branches are %v, want all of them", got)
	}
	if n := deleted(t, reg); n != 0 {
		t.Errorf("dry run counted %v deletions", n)
	}

	ds, err := j.Sweep(ctx, false)
	must(t, err)
	checkDecisions(t, ds, want, true)
	if got := branchNames(t, ctx, lake); !slices.Equal(got, sorted(keep)) {
		t.Errorf("after the sweep branches are %v, want %v", got, sorted(keep))
	}
	if n := deleted(t, reg); n != float64(len(want)) {
		t.Errorf("lakewap_janitor_branches_deleted_total sums to %v, want %d", n, len(want))
	}

	// Nothing left to do: a second sweep deletes nothing.
	again, err := j.Sweep(ctx, false)
	must(t, err)
	for _, d := range again {
		if d.Delete {
			t.Errorf("second sweep wants to delete %+v", d)
		}
	}
}

func TestSweepStopsWhenRunsCannotBeLoaded(t *testing.T) {
	lake := &fakeLake{branches: []lakefs.Branch{{Name: "wap-billing-x", CommitID: "c1"}}}
	j, err := janitor.New(janitor.Config{Lake: lake,
		Runs:     func(context.Context) ([]pipeline.Run, error) { return nil, errors.New("kafka down") },
		Datasets: []janitor.Dataset{{Name: "billing", Repository: "lake"}}})
	must(t, err)
	if _, err := j.Sweep(context.Background(), false); err == nil || !strings.Contains(err.Error(), "kafka down") {
		t.Fatalf("Sweep error %v, want the state store's", err)
	}
	if len(lake.deleted) != 0 {
		t.Errorf("deleted %v without knowing the runs", lake.deleted)
	}
}

func TestDeleteFailureIsReportedAndSweepGoesOn(t *testing.T) {
	old := time.Now().Add(-100 * time.Hour)
	lake := &fakeLake{
		branches: []lakefs.Branch{{Name: "wap-a", CommitID: "c"}, {Name: "wap-b", CommitID: "c"}},
		head:     old, failDelete: "wap-a",
	}
	j, err := janitor.New(janitor.Config{Lake: lake,
		Runs:     func(context.Context) ([]pipeline.Run, error) { return nil, nil },
		Datasets: []janitor.Dataset{{Name: "billing", Repository: "lake"}}})
	must(t, err)
	ds, err := j.Sweep(context.Background(), false)
	if err == nil || !strings.Contains(err.Error(), "wap-a") {
		t.Errorf("error %v, want one naming wap-a", err)
	}
	if len(ds) != 2 || ds[0].Deleted || ds[0].Err == "" || !ds[1].Deleted {
		t.Errorf("decisions %+v, want wap-a failed and wap-b deleted", ds)
	}
}

type fakeLake struct {
	branches   []lakefs.Branch
	head       time.Time
	failDelete string
	deleted    []string
}

func (f *fakeLake) ListBranches(context.Context, string, string) ([]lakefs.Branch, error) {
	return f.branches, nil
}
func (f *fakeLake) GetCommit(_ context.Context, _, ref string) (lakefs.Commit, error) {
	for _, b := range f.branches {
		if b.Name == ref {
			return lakefs.Commit{ID: b.CommitID, CreationDate: f.head}, nil
		}
	}
	return lakefs.Commit{ID: ref, CreationDate: f.head}, nil
}
func (f *fakeLake) DeleteBranch(_ context.Context, _, b string) error {
	if b == f.failDelete {
		return errors.New("lakefs delete branch: HTTP 500")
	}
	f.deleted = append(f.deleted, b)
	return nil
}

func checkDecisions(t *testing.T, ds []janitor.Decision, want map[string]string, deleted bool) {
	t.Helper()
	got := map[string]string{}
	for _, d := range ds {
		if d.Err != "" {
			t.Errorf("%s: error %s", d.Branch, d.Err)
		}
		if d.Delete {
			got[d.Branch] = d.Why
			if d.Deleted != deleted {
				t.Errorf("%s: deleted=%v, want %v", d.Branch, d.Deleted, deleted)
			}
		} else if d.Deleted {
			t.Errorf("%s: deleted but not to be deleted", d.Branch)
		}
		if d.Branch == "main" || d.Branch == "feature-x" {
			t.Errorf("janitor looked at %s, which has no wap- prefix", d.Branch)
		}
	}
	if len(got) != len(want) {
		t.Errorf("to delete: %v, want %v", got, want)
	}
	for b, why := range want {
		if got[b] != why {
			t.Errorf("%s: why=%q, want %q (all: %v)", b, got[b], why, got)
		}
	}
}

func branchNames(t *testing.T, ctx context.Context, lake *lakefs.Client) []string {
	t.Helper()
	bs, err := lake.ListBranches(ctx, "lake", "")
	must(t, err)
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return sorted(out)
}

func sorted(s []string) []string { slices.Sort(s); return s }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRunSweepsUntilCancelled(t *testing.T) {
	// A lake that forgets a branch once deleted, as lakeFS does: a sweep
	// after the first finds nothing to delete (the plain fake kept the
	// branch, so a second sweep before the count was read made it 2).
	lake := &forgettingLake{fakeLake: &fakeLake{branches: []lakefs.Branch{{Name: "wap-x", CommitID: "c"}}, head: time.Now().Add(-48 * time.Hour)}}
	reg := prometheus.NewRegistry()
	j, err := janitor.New(janitor.Config{Lake: lake,
		Runs:       func(context.Context) ([]pipeline.Run, error) { return nil, nil },
		Datasets:   []janitor.Dataset{{Name: "billing", Repository: "lake"}},
		Registerer: reg})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { j.Run(ctx, time.Millisecond, false); close(done) }()
	for deadline := time.Now().Add(30 * time.Second); deleted(t, reg) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no deletion counted by Run")
		}
	}
	if n := deletedBy(t, reg, "lake", janitor.WhyAbandoned); n != 1 {
		t.Errorf("lake/%s deletions %v, want 1", janitor.WhyAbandoned, n)
	}
	cancel()
	<-done
}

// forgettingLake is fakeLake whose deleted branches are gone, safe for
// a sweeping goroutine.
type forgettingLake struct {
	*fakeLake
	mu sync.Mutex
}

func (f *forgettingLake) ListBranches(ctx context.Context, repo, prefix string) ([]lakefs.Branch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.branches), nil
}

func (f *forgettingLake) DeleteBranch(ctx context.Context, repo, b string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fakeLake.DeleteBranch(ctx, repo, b); err != nil {
		return err
	}
	f.branches = slices.DeleteFunc(f.branches, func(x lakefs.Branch) bool { return x.Name == b })
	return nil
}

// A run in progress for longer than MaxRunAge is stuck: the janitor asks
// the daemon to cancel it (not in a dry run) and deletes nothing; younger
// runs in progress are left alone.
func TestOverdueRunsAreCancelled(t *testing.T) {
	now := time.Now()
	lake := &fakeLake{branches: []lakefs.Branch{{Name: "wap-billing-stuck", CommitID: "c"}, {Name: "wap-billing-young", CommitID: "c"}}, head: now}
	runs := []pipeline.Run{
		{BatchID: "stuck", Dataset: "billing", Repository: "lake", Branch: "wap-billing-stuck", State: pipeline.StateAwaitingWrites,
			LandedAt: now.Add(-9 * 24 * time.Hour), StateSince: now.Add(-9 * 24 * time.Hour)},
		{BatchID: "young", Dataset: "billing", Repository: "lake", Branch: "wap-billing-young", State: pipeline.StateAuditing,
			LandedAt: now.Add(-time.Hour), StateSince: now.Add(-time.Minute)},
	}
	var cancelled []string
	cfg := janitor.Config{Lake: lake, MaxRunAge: 8 * 24 * time.Hour,
		Runs:     func(context.Context) ([]pipeline.Run, error) { return runs, nil },
		Datasets: []janitor.Dataset{{Name: "billing", Repository: "lake"}},
		Cancel: func(_ context.Context, r pipeline.Run, reason string) error {
			cancelled = append(cancelled, r.BatchID+": "+reason)
			return nil
		}}
	if _, err := janitor.New(janitor.Config{Lake: lake, Runs: cfg.Runs, MaxRunAge: time.Hour}); err == nil {
		t.Error("New accepted MaxRunAge without Cancel")
	}
	j, err := janitor.New(cfg)
	must(t, err)
	dry, err := j.Sweep(context.Background(), true)
	must(t, err)
	if len(cancelled) != 0 {
		t.Errorf("dry run cancelled %v", cancelled)
	}
	for _, d := range dry {
		if want := map[string]string{"stuck": janitor.WhyOverdue, "young": "run in progress"}[d.BatchID]; d.Why != want || d.Delete {
			t.Errorf("%s: why %q delete %v, want %q and no delete", d.BatchID, d.Why, d.Delete, want)
		}
	}
	ds, err := j.Sweep(context.Background(), false)
	must(t, err)
	if len(cancelled) != 1 || !strings.HasPrefix(cancelled[0], "stuck: lakewap janitor: run in progress for 216h") {
		t.Errorf("cancelled %v, want the stuck run", cancelled)
	}
	for _, d := range ds {
		if d.BatchID == "stuck" && !d.Cancelled {
			t.Errorf("decision %+v not marked cancelled", d)
		}
	}
	if len(lake.deleted) != 0 {
		t.Errorf("deleted %v", lake.deleted)
	}
}

// deleted sums lakewap_janitor_branches_deleted_total in reg.
func deleted(t *testing.T, reg *prometheus.Registry) float64 { return deletedBy(t, reg, "", "") }

// deletedBy sums lakewap_janitor_branches_deleted_total in reg for repo
// and why ("" for any).
func deletedBy(t *testing.T, reg *prometheus.Registry, repo, why string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "lakewap_janitor_branches_deleted_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := true
			for _, l := range m.GetLabel() {
				if (l.GetName() == "repository" && repo != "" && l.GetValue() != repo) || (l.GetName() == "reason" && why != "" && l.GetValue() != why) {
					ok = false
				}
			}
			if ok {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestOneRepositorysListingDoesNotStopTheOthers: anyone with a writer's key
// on one repository can make more `wap-` branches there than a listing
// takes (audit.max_list_objects), and a repository can be unreachable. The
// sweep stopped at the first repository it could not list, so no other
// repository's expired branch was ever deleted again. Now that repository's
// error is reported, and the others are swept.
func TestOneRepositorysListingDoesNotStopTheOthers(t *testing.T) {
	lake := &fakeLake{branches: []lakefs.Branch{{Name: "wap-x", CommitID: "c"}}, head: time.Now().Add(-100 * time.Hour)}
	flooded := &floodedLake{fakeLake: lake, flooded: "a-sandbox"}
	j, err := janitor.New(janitor.Config{Lake: flooded,
		Runs:     func(context.Context) ([]pipeline.Run, error) { return nil, nil },
		Datasets: []janitor.Dataset{{Name: "scratch", Repository: "a-sandbox"}, {Name: "billing", Repository: "lake"}}})
	must(t, err)
	ds, err := j.Sweep(context.Background(), false)
	if err == nil || !strings.Contains(err.Error(), "a-sandbox") || !errors.Is(err, lakefs.ErrListOverLimit) {
		t.Errorf("Sweep error %v; want one naming a-sandbox's listing over its limit", err)
	}
	if !slices.Equal(lake.deleted, []string{"wap-x"}) || len(ds) != 1 || !ds[0].Deleted || ds[0].Repository != "lake" {
		t.Errorf("deleted %v, decisions %+v; want lake's wap-x deleted", lake.deleted, ds)
	}
}

// floodedLake is fakeLake whose repository flooded holds more branches
// than a listing takes.
type floodedLake struct {
	*fakeLake
	flooded string
}

func (f *floodedLake) ListBranches(ctx context.Context, repo, prefix string) ([]lakefs.Branch, error) {
	if repo == f.flooded {
		return nil, &lakefs.Error{Op: "list branches", Repo: repo, Ref: prefix, Cause: fmt.Errorf("%w: more than 1000000 entries", lakefs.ErrListOverLimit)}
	}
	return f.fakeLake.ListBranches(ctx, repo, prefix)
}

// TestUnknownOwnUserKeepsBranchesWithoutARun: without knowing lakewap's
// lakeFS user the janitor cannot tell a forgotten run's seal from a
// writer's commit, so it deletes no branch without a run, and says why.
func TestUnknownOwnUserKeepsBranchesWithoutARun(t *testing.T) {
	lake := &fakeLake{branches: []lakefs.Branch{{Name: "wap-x", CommitID: "c"}}, head: time.Now().Add(-100 * time.Hour)}
	j, err := janitor.New(janitor.Config{Lake: lake,
		Runs:     func(context.Context) ([]pipeline.Run, error) { return nil, nil },
		Own:      func(context.Context) (string, error) { return "", errors.New("lakefs get current user: HTTP 503") },
		Datasets: []janitor.Dataset{{Name: "billing", Repository: "lake"}}})
	must(t, err)
	ds, err := j.Sweep(context.Background(), false)
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("Sweep error %v; want the user lookup's", err)
	}
	if len(lake.deleted) != 0 || len(ds) != 1 || ds[0].Delete || ds[0].Err == "" {
		t.Errorf("deleted %v, decisions %+v; want wap-x kept with an error", lake.deleted, ds)
	}
}

// TestDaemonSweepHoldsNothingPerWriterBranch: anyone with a lakeFS writer's
// key may make up to audit.max_list_objects wap- branches without a run.
// The daemon's sweep (Walk with no visitor, what Run calls) must count them,
// not hold (or allocate) a Decision for each: what it allocates per sweep
// must not grow with the branches writers made.
func TestDaemonSweepHoldsNothingPerWriterBranch(t *testing.T) {
	const n = 20000
	now := time.Now()
	lake := &fakeLake{head: now.Add(-time.Hour)} // young: kept
	for i := range n {
		lake.branches = append(lake.branches, lakefs.Branch{Name: fmt.Sprintf("wap-mallory-%d", i), CommitID: "c"})
	}
	j, err := janitor.New(janitor.Config{Lake: lake,
		Runs:     func(context.Context) ([]pipeline.Run, error) { return nil, nil },
		Datasets: []janitor.Dataset{{Name: "billing", Repository: "lake"}},
		Now:      func() time.Time { return now }})
	must(t, err)
	ctx := context.Background()
	tally, err := j.Walk(ctx, false, nil)
	must(t, err)
	young := fmt.Sprintf("no run, head commit younger than %s", janitor.DefaultAbandonedAfter)
	if tally.Branches != n || tally.Expired != 0 || tally.Kept[young] != n || len(tally.Kept) != 1 {
		t.Fatalf("tally %+v; want %d branches all kept as %q", tally, n, young)
	}
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := j.Walk(ctx, false, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > n/100 {
		t.Errorf("the daemon's sweep over %d run-less young branches made %.0f allocations; want a bound that does not follow the branches (< %d)", n, allocs, n/100)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = j.Walk(ctx, false, nil)
	must(t, err)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("the daemon's sweep over %d run-less young branches allocated %d bytes (%d a branch); want under 64 KiB", n, grew, grew/n)
	}
}

// TestSweepErrorIsBoundedOverUnreadableHeads: a writer can make many
// branches whose head the janitor cannot read (a head id past
// pipeline.MaxCommitIDBytes is listed empty). Each is kept and reported,
// but the sweep's error names the first few and counts the rest, instead of
// holding an error per branch.
func TestSweepErrorIsBoundedOverUnreadableHeads(t *testing.T) {
	const n = 5000
	lake := &unreadableLake{fakeLake: &fakeLake{}}
	for i := range n {
		lake.branches = append(lake.branches, lakefs.Branch{Name: fmt.Sprintf("wap-mallory-%d", i)})
	}
	j, err := janitor.New(janitor.Config{Lake: lake,
		Runs:     func(context.Context) ([]pipeline.Run, error) { return nil, nil },
		Datasets: []janitor.Dataset{{Name: "billing", Repository: "lake"}}})
	must(t, err)
	tally, err := j.Walk(context.Background(), false, nil)
	if err == nil || tally.Kept["head commit unreadable"] != n || tally.Expired != 0 {
		t.Fatalf("tally %+v, err %v; want %d kept unreadable and an error", tally, err, n)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("and %d more", n-10)) || len(err.Error()) > 4<<10 {
		t.Errorf("the sweep's error is %d bytes, %.200q...; want the first 10 named and the %d others counted", len(err.Error()), err.Error(), n-10)
	}
}

type unreadableLake struct{ *fakeLake }

func (unreadableLake) GetCommit(context.Context, string, string) (lakefs.Commit, error) {
	return lakefs.Commit{}, errors.New("lakefs get commit: empty ref")
}
