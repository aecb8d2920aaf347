package runner

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// historyLake is a target whose first-parent commits since a batch's
// snapshot are c0..cN, the last one its head. It records every write: a
// recheck writes nothing but the one merge of the sealed commit.
type historyLake struct {
	pipeline.Lake
	mu       sync.Mutex
	commits  []string
	branches []string // branches made
	merges   []string // "source->dest"
}

func (l *historyLake) FirstParentsAfter(_ context.Context, _, ref, base string, limit int) ([]string, error) {
	return l.commits, nil
}

func (l *historyLake) Published(context.Context, string, string, string, time.Time) (pipeline.Publication, error) {
	return pipeline.Publication{Head: l.commits[len(l.commits)-1], Base: "base"}, nil
}

func (l *historyLake) EnsureBranch(_ context.Context, _, branch, from string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.branches = append(l.branches, branch)
	return false, nil
}

func (l *historyLake) Merge(_ context.Context, _, source, dest, _ string, _ map[string]string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.merges = append(l.merges, source+"->"+dest)
	return "merge-of-" + source, nil
}

func (l *historyLake) Changes(_ context.Context, _, base, ref string) ([]pipeline.Change, error) {
	return []pipeline.Change{{Path: "gold/t/batch=b1/part-0.parquet", Size: 1}}, nil
}

func (l *historyLake) DeleteBranch(context.Context, string, string) error { return nil }

// firstFailing fails the sealed commit s1 applied to commit c<k> or later;
// it answers only audits onto a commit of the history.
type firstFailing struct {
	commits []string
	k       int
	audits  int
}

func (a *firstFailing) Audit(_ context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	a.audits++
	if !req.Onto || req.Ref != "s1" || len(req.Changes) != 1 {
		return schemas.AuditReport{}, fmt.Errorf("audit of %s (onto %v, %d changes): not the sealed commit onto a commit", req.Ref, req.Onto, len(req.Changes))
	}
	i := slices.Index(a.commits, req.BaseRef)
	if i < 0 {
		return schemas.AuditReport{}, fmt.Errorf("audit onto %s: not a commit of the history", req.BaseRef)
	}
	st := schemas.StatusPass
	if i >= a.k {
		st = schemas.StatusFail
	}
	return schemas.AuditReport{Ref: req.Ref, Passed: st == schemas.StatusPass, Checks: []schemas.CheckResult{{Name: "id_unique", Severity: "error", Status: st}}}, nil
}

func historyRun() pipeline.Run {
	return pipeline.Run{BatchID: "b1", Dataset: "billing", Repository: "lake", Target: "main", Branch: "wap-billing-b1", State: pipeline.StatePublishing,
		SealedCommit: "s1", Report: &schemas.AuditReport{Passed: true}, OntoRecorded: true}
}

func historyRunner(lake pipeline.Lake, aud pipeline.Auditor) *Runner {
	return &Runner{log: slog.New(slog.DiscardHandler), cfg: Config{Lake: lake, Auditor: aud, Failpoint: func(string) {},
		Datasets: func(string) (pipeline.DatasetSpec, bool) {
			return pipeline.DatasetSpec{Repository: "lake", Target: "main", TablePaths: []string{"gold/t/"}}, true
		}}}
}

// The commit a batch collides with is the first commit since its snapshot
// it fails with, found by bisection within the probe budget; every probe
// is an audit of the sealed commit onto a candidate, and nothing is
// written to lakeFS for it (no probe branch, no merge).
func TestCollidesWithNamesTheFirstFailingCommit(t *testing.T) {
	var commits []string
	for i := range 40 {
		commits = append(commits, fmt.Sprintf("c%02d", i))
	}
	for _, k := range []int{0, 1, 17, 38, 39} {
		lake := &historyLake{commits: commits}
		aud := &firstFailing{commits: commits, k: k}
		r := historyRunner(lake, aud)
		changes := []pipeline.Change{{Path: "gold/t/batch=b1/part-0.parquet", Size: 1}}
		got, err := r.collidesWith(context.Background(), r.log, historyRun(), "base", commits[len(commits)-1], []string{"id_unique"}, changes, nil)
		if err != nil || got != commits[k] {
			t.Errorf("k=%d: collidesWith = %s, %v; want %s", k, got, err, commits[k])
		}
		if aud.audits > maxRecheckProbes {
			t.Errorf("k=%d: %d probes, want at most %d", k, aud.audits, maxRecheckProbes)
		}
		if len(lake.branches)+len(lake.merges) > 0 {
			t.Errorf("k=%d: probes made branches %v and merges %v; want none", k, lake.branches, lake.merges)
		}
	}
}

// A publish onto a moved target rechecks the sealed commit onto the head
// and merges the sealed commit itself into the target; the batch branch is
// not written to. A recheck that fails aborts with the colliding commit,
// the branch still at its seal (review finding 4: the recheck used to merge
// the target's head into the batch branch).
func TestRecheckLeavesTheBatchBranchAtItsSeal(t *testing.T) {
	commits := []string{"c0", "c1", "c2", "c3"}
	for _, tt := range []struct {
		name   string
		k      int // first commit the batch fails with; len(commits): none
		merges []string
	}{
		{"passes", len(commits), []string{"s1->main"}},
		{"collides", 2, nil},
	} {
		lake := &historyLake{commits: commits}
		r := historyRunner(lake, &firstFailing{commits: commits, k: tt.k})
		in := r.publish(context.Background(), historyRun(), nil)
		switch want := tt.k < len(commits); in := in.(type) {
		case pipeline.Merged:
			if want || in.CommitID != "merge-of-s1" || in.SealedCommit != "" || in.Report == nil || in.Report.Ref != "s1" {
				t.Errorf("%s: %+v; want the sealed commit s1 merged with the recheck's report", tt.name, in)
			}
		case pipeline.Collided:
			if !want || in.Commit != commits[tt.k] || in.SealedCommit != "s1" || !strings.Contains(strings.Join(in.Checks, ","), "id_unique") {
				t.Errorf("%s: %+v; want a collision with %s of the sealed commit s1", tt.name, in, commits[tt.k])
			}
		default:
			t.Errorf("%s: %T %+v", tt.name, in, in)
		}
		if fmt.Sprint(lake.merges) != fmt.Sprint(tt.merges) || len(lake.branches) > 0 {
			t.Errorf("%s: merges %v, branches made %v; want merges %v and no branch", tt.name, lake.merges, lake.branches, tt.merges)
		}
	}
}

// prepLake finds the foundation f1 (MergeBase), answers Published from a
// script and Changes with a change that names the refs it was asked for.
type prepLake struct {
	pipeline.Lake
	mu        sync.Mutex
	published []pipeline.Publication
	asked     []string // "base...ref" of each Changes
}

func (l *prepLake) MergeBase(_ context.Context, _, source, dest string) (string, string, error) {
	return "f1", "h1", nil
}

func (l *prepLake) Published(context.Context, string, string, string, time.Time) (pipeline.Publication, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.published[0]
	if len(l.published) > 1 {
		l.published = l.published[1:]
	}
	return p, nil
}

func (l *prepLake) Changes(_ context.Context, _, base, ref string) ([]pipeline.Change, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, base+"..."+ref)
	return []pipeline.Change{{Path: "gold/t/" + base + "/part-0.parquet", Size: 1}}, nil
}

func (l *prepLake) Merge(context.Context, string, string, string, string, map[string]string) (string, error) {
	return "m1", nil
}

// changesOf records the changes each audit onto a commit was given.
type changesOf struct{ got []string }

func (a *changesOf) Audit(_ context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	for _, c := range req.Changes {
		a.got = append(a.got, c.Path)
	}
	return schemas.AuditReport{Ref: req.Ref, Passed: true}, nil
}

// A publish that waited for its turn took its sealed commit's diff against
// its foundation meanwhile (prepareDiff); the recheck in the turn uses it
// only when the look in the turn finds the same foundation, and otherwise
// takes the diff of head and seal itself.
func TestPreparedDiffOnlyForTheSameFoundation(t *testing.T) {
	for _, tt := range []struct {
		name       string
		turnBase   string // the foundation the look in the turn finds
		wantAsked  string
		wantChange string
	}{
		{"same foundation", "f1", "f1...s1", "gold/t/f1/part-0.parquet"},
		{"foundation moved", "f2", "f1...s1 h2...s1", "gold/t/h2/part-0.parquet"},
	} {
		l := &prepLake{published: []pipeline.Publication{{Head: "h2", Base: tt.turnBase}}}
		aud := &changesOf{}
		r := historyRunner(l, aud)
		run := historyRun()
		in, ok := publishWithPreparedDiff(r, run)
		if !ok || strings.Join(l.asked, " ") != tt.wantAsked || strings.Join(aud.got, " ") != tt.wantChange {
			t.Errorf("%s: %+v; diffs asked %v, recheck given %v; want %s and %s", tt.name, in, l.asked, aud.got, tt.wantAsked, tt.wantChange)
		}
	}
}

// publishWithPreparedDiff takes run's diff as a waiting publish does,
// waits for it, then publishes.
func publishWithPreparedDiff(r *Runner, run pipeline.Run) (pipeline.Merged, bool) {
	r.prepareDiff(context.Background(), run)
	r.dmu.Lock()
	f := r.diffs[diffKey(run)]
	r.dmu.Unlock()
	<-f.done
	in, ok := r.publish(context.Background(), run, nil).(pipeline.Merged)
	return in, ok
}

// The audit step's diff of the seal (three-dot, against the target's
// commit it audited onto) is the diff a waiting publish would take: the
// publish takes it instead of asking lakeFS again, and still only when the
// look in the turn finds the foundation that diff was taken from.
func TestPreparedDiffIsTheAuditsDiff(t *testing.T) {
	for _, tt := range []struct {
		name       string
		against    string // the commit the audit diffed against; the merge-base is f1
		turnBase   string
		wantAsked  string
		wantChange string
	}{
		{"same foundation", "f1", "f1", "", "gold/t/audited/part-0.parquet"},
		{"foundation moved", "f1", "f2", "h2...s1", "gold/t/h2/part-0.parquet"},
		// A three-dot diff against a commit past the merge-base leaves out
		// what the seal holds as that commit does (a path both added
		// alike): not the diff from the foundation, so it is taken anew.
		{"audited against a head past the foundation", "h0", "f1", "f1...s1", "gold/t/f1/part-0.parquet"},
	} {
		l := &prepLake{published: []pipeline.Publication{{Head: "h2", Base: tt.turnBase}}}
		aud := &changesOf{}
		r := historyRunner(l, aud)
		run := historyRun()
		r.audited.put(run.Repository, run.SealedCommit, tt.against, []pipeline.Change{{Path: "gold/t/audited/part-0.parquet", Size: 1}})
		in, ok := publishWithPreparedDiff(r, run)
		if !ok || strings.Join(l.asked, " ") != tt.wantAsked || strings.Join(aud.got, " ") != tt.wantChange {
			t.Errorf("%s: %+v; diffs asked %q, recheck given %v; want %q and %s", tt.name, in, l.asked, aud.got, tt.wantAsked, tt.wantChange)
		}
		if _, _, kept := r.audited.take(run.Repository, run.SealedCommit); kept {
			t.Errorf("%s: the audit's diff is kept after its publish took it", tt.name)
		}
	}
}

// The audit step's diffs are bounded in count and in changes, the oldest
// going first.
func TestAuditedDiffsAreBounded(t *testing.T) {
	var a auditedDiffs
	one := []pipeline.Change{{Path: "p"}}
	for i := range maxAuditedDiffs + 10 {
		a.put("lake", fmt.Sprint("s", i), "h", one)
	}
	if len(a.m) != maxAuditedDiffs || a.changes != maxAuditedDiffs {
		t.Fatalf("%d diffs of %d changes kept, want %d", len(a.m), a.changes, maxAuditedDiffs)
	}
	if _, _, ok := a.take("lake", "s0"); ok {
		t.Error("the oldest diff was kept past the bound")
	}
	big := make([]pipeline.Change, maxAuditedChanges-5)
	a.put("lake", "big", "h", big)
	if a.changes > maxAuditedChanges || len(a.m) != 1+5 {
		t.Errorf("after a large diff: %d diffs of %d changes, want at most %d changes and the 5 newest small ones", len(a.m), a.changes, maxAuditedChanges)
	}
	if _, ch, ok := a.take("lake", "big"); !ok || len(ch) != len(big) {
		t.Error("the large diff was not kept")
	}
}

// recordingAuditor is firstFailing that is told of the runner's merges.
type recordingAuditor struct {
	*firstFailing
	merged []string // "repo commit sealed"
}

func (a *recordingAuditor) Merged(repo, commit, sealed string) {
	a.merged = append(a.merged, repo+" "+commit+" "+sealed)
}

func (a *recordingAuditor) Sealed(string, string) {}

// onTargetLake finds the sealed commit already merged (by an earlier
// attempt, another instance or a person).
type onTargetLake struct{ *historyLake }

func (l onTargetLake) Published(context.Context, string, string, string, time.Time) (pipeline.Publication, error) {
	return pipeline.Publication{OnTarget: true, Merge: "m0", Head: "m0", Base: "s1"}, nil
}

// The auditor is told of the merges the runner made itself (the audits
// derive their listings, audit/derive.go), and of no other: not of a
// batch that collided, nor of a merge found on the target.
func TestOnlyOwnMergesAreToldToTheAuditor(t *testing.T) {
	commits := []string{"c0", "c1"}
	for _, tt := range []struct {
		name   string
		lake   func(*historyLake) pipeline.Lake
		k      int
		merged []string
	}{
		{"merged", func(l *historyLake) pipeline.Lake { return l }, len(commits), []string{"lake merge-of-s1 s1"}},
		{"collided", func(l *historyLake) pipeline.Lake { return l }, 1, nil},
		{"found on the target", func(l *historyLake) pipeline.Lake { return onTargetLake{l} }, len(commits), nil},
	} {
		aud := &recordingAuditor{firstFailing: &firstFailing{commits: commits, k: tt.k}}
		r := historyRunner(tt.lake(&historyLake{commits: commits}), aud)
		r.publish(context.Background(), historyRun(), nil)
		if fmt.Sprint(aud.merged) != fmt.Sprint(tt.merged) {
			t.Errorf("%s: told %v, want %v", tt.name, aud.merged, tt.merged)
		}
	}
}
