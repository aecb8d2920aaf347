package auditsource

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lakewap/lakewap/audit"
)

// TestLimits64EntryOnTheTargetIsAnnouncedOnce, on the real lakeFS server.
// An object past a listing's per-entry limits already on main (review 63
// names it in each batch's failed check) made every later batch of its
// table fail, and operators learnt it only batch by batch: one aborted
// event and one Slack message each, nothing to alert on. The audit now
// tells it once per entry while it stays on the target (one error log
// naming the path, the target and what to do) and shows it on /metrics
// (lakewap_audit_target_entries_over_limit{dataset}, alert
// LakewapTargetEntryOverLimit) until an audit of the dataset finds the
// target clean again.
func TestLimits64EntryOnTheTargetIsAnnouncedOnce(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	if err := s.lake.Upload(ctx, "lake", "main", "other/seed", strings.NewReader("z")); err != nil {
		t.Fatal(err)
	}
	seed := s.commit(t, "main", "seed")
	bad := relinkPrefix + "batch=0/part-0.csv"
	s.relink(t, "main", bad, relinkGood, strings.Repeat("f", 4096), int64(len(relinkGood)))
	mainHead := s.commit(t, "main", "a hand commit")

	var logs bytes.Buffer
	tmp := t.TempDir()
	e, err := audit.New(audit.Options{Source: s.src, WorkDir: tmp, CacheDir: filepath.Join(tmp, "cache"), Threads: 1, MemoryLimit: "512MB",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	reg := prometheus.NewRegistry()
	svc, err := audit.NewService(audit.ServiceOptions{Engine: e, Concurrency: 1, Budget: time.Minute, Registerer: reg,
		Datasets: map[string]audit.Dataset{"d": {Repository: "lake", Target: "main", Suite: relinkSuite}}})
	if err != nil {
		t.Fatal(err)
	}
	const gauge = "lakewap_audit_target_entries_over_limit"

	// Three batches of the table after it: three failed audits, one word.
	for i := 1; i <= 3; i++ {
		br := "honest-" + string(rune('0'+i))
		if _, err := s.lake.EnsureBranch(ctx, "lake", br, "main"); err != nil {
			t.Fatal(err)
		}
		if err := s.lake.Upload(ctx, "lake", br, relinkPrefix+"batch="+string(rune('0'+i))+"/part-0.csv", strings.NewReader(relinkGood)); err != nil {
			t.Fatal(err)
		}
		sealed := s.commit(t, br, "honest batch")
		rep, err := svc.Audit(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sealed, BaseRef: mainHead, BaseName: "main"})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Passed {
			t.Fatalf("batch %d passed over a 4 KiB checksum on main", i)
		}
	}
	var told []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, bad) {
			told = append(told, line)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], "every batch") || !strings.Contains(told[0], "main") {
		t.Errorf("the entry on main was told %d times at error level over three batches; want once, naming it, main and that every batch is refused:\n%s", len(told), strings.Join(told, "\n"))
	}
	if n, err := testutil.GatherAndCount(reg, gauge); err != nil || n != 1 {
		t.Fatalf("%s: %d series, %v; want one", gauge, n, err)
	}
	if v := testutil.ToFloat64(mustCollector(t, reg, gauge)); v != 1 {
		t.Errorf("%s = %v while main holds the entry; want 1", gauge, v)
	}

	// A target without it (here the commit before the hand commit, as
	// after the operator removed it): 0.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "clean", seed); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "clean", relinkPrefix+"batch=9/part-0.csv", strings.NewReader(relinkGood)); err != nil {
		t.Fatal(err)
	}
	sealed := s.commit(t, "clean", "batch onto a clean main")
	if _, err := svc.Audit(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: sealed, BaseRef: seed, BaseName: "main"}); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(mustCollector(t, reg, gauge)); v != 0 {
		t.Errorf("%s = %v once the target is clean; want 0", gauge, v)
	}
}

// mustCollector is the one series named name that reg gathers, as a
// collector testutil reads.
func mustCollector(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.Metric) == 1 {
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "copy"})
			g.Set(f.Metric[0].GetGauge().GetValue())
			return g
		}
	}
	t.Fatalf("no single series %s gathered", name)
	return nil
}
