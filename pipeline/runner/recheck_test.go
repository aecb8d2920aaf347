package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// historyLake is a target whose first-parent commits since a batch's
// snapshot are c0..cN; a probe merges one of them into a branch made from
// the sealed commit.
type historyLake struct {
	pipeline.Lake
	mu       sync.Mutex
	commits  []string
	branches map[string]string // branch -> what it was made from, then the commit merged into it
	deleted  []string
}

func (l *historyLake) FirstParentsAfter(_ context.Context, _, ref, base string, limit int) ([]string, error) {
	return l.commits, nil
}

func (l *historyLake) EnsureBranch(_ context.Context, _, branch, from string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.branches[branch] = from
	return false, nil
}

func (l *historyLake) Merge(_ context.Context, _, source, dest, _ string, _ map[string]string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return "batch-on-" + source, nil
}

func (l *historyLake) Changes(context.Context, string, string, string) ([]pipeline.Change, error) {
	return []pipeline.Change{{Path: "gold/t/batch=b1/part-0.parquet", Size: 1}}, nil
}

func (l *historyLake) DeleteBranch(_ context.Context, _, branch string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleted = append(l.deleted, branch)
	return nil
}

// firstFailing fails a batch applied to commit c<k> or later.
type firstFailing struct {
	commits []string
	k       int
	audits  int
}

func (a *firstFailing) Audit(_ context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	a.audits++
	on := strings.TrimPrefix(req.Ref, "batch-on-")
	for i, c := range a.commits {
		if c == on && req.BaseRef == c {
			st := schemas.StatusPass
			if i >= a.k {
				st = schemas.StatusFail
			}
			return schemas.AuditReport{Passed: st == schemas.StatusPass, Checks: []schemas.CheckResult{{Name: "id_unique", Severity: "error", Status: st}}}, nil
		}
	}
	return schemas.AuditReport{}, fmt.Errorf("audit of %s against %s: not a probe of the history", req.Ref, req.BaseRef)
}

// The commit a batch collides with is the first commit since its snapshot
// it fails with, found by bisection within the probe budget; every probe
// branch is made from the sealed commit and deleted.
func TestCollidesWithNamesTheFirstFailingCommit(t *testing.T) {
	var commits []string
	for i := range 40 {
		commits = append(commits, fmt.Sprintf("c%02d", i))
	}
	for _, k := range []int{0, 1, 17, 38, 39} {
		lake := &historyLake{commits: commits, branches: map[string]string{}}
		aud := &firstFailing{commits: commits, k: k}
		r := &Runner{cfg: Config{Lake: lake, Auditor: aud}}
		run := pipeline.Run{BatchID: "b1", Dataset: "billing", Repository: "lake", Target: "main", Branch: "wap-billing-b1", SealedCommit: "s1"}
		got, err := r.collidesWith(context.Background(), slog.New(slog.DiscardHandler), run, "base", commits[len(commits)-1], []string{"id_unique"})
		if err != nil || got != commits[k] {
			t.Errorf("k=%d: collidesWith = %s, %v; want %s", k, got, err, commits[k])
		}
		if aud.audits > maxRecheckProbes {
			t.Errorf("k=%d: %d probes, want at most %d", k, aud.audits, maxRecheckProbes)
		}
		for b, from := range lake.branches {
			if from != "s1" || !strings.HasPrefix(b, "wap-billing-b1-probe-") {
				t.Errorf("k=%d: probe branch %s made from %s", k, b, from)
			}
		}
		if len(lake.deleted) != len(lake.branches) {
			t.Errorf("k=%d: %d probe branches made, %d deleted", k, len(lake.branches), len(lake.deleted))
		}
	}
}
