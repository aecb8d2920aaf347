package audit

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// runDirWatch is a log handler that notes, at each record a run logs,
// whether a run's download exists in the engine's files directory: a run
// logs "audit done" before it removes its downloads, so a run that made
// one is seen.
type runDirWatch struct {
	dir  string
	seen *atomic.Int64
}

func (w runDirWatch) Enabled(context.Context, slog.Level) bool { return true }

func (w runDirWatch) Handle(context.Context, slog.Record) error {
	entries, _ := os.ReadDir(filepath.Join(w.dir, "files"))
	w.seen.Add(int64(len(entries)))
	return nil
}

func (w runDirWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w runDirWatch) WithGroup(string) slog.Handler      { return w }

// watched runs req on the memo engine alone and returns its report and
// error, the downloads it made and whether a run directory was seen.
func (r *memoRig) watched(req Request) (schemas.AuditReport, error, int, bool) {
	r.t.Helper()
	req.Dataset, req.Suite, req.Repository, req.BatchTime = "d", r.suite, "r", batchTime
	seen := new(atomic.Int64)
	logger := r.memo.opts.Logger
	r.memo.opts.Logger = slog.New(runDirWatch{dir: r.memo.dir, seen: seen})
	defer func() { r.memo.opts.Logger = logger }()
	before := r.lake.totalDownloads()
	rep, err := r.memo.Run(context.Background(), req)
	return rep, err, r.lake.totalDownloads() - before, seen.Load() > 0
}

// emptyCache removes the memo engine's cached files, so that what it reads
// is downloaded again.
func (r *memoRig) emptyCache() {
	r.t.Helper()
	if r.memo.opts.CacheDir == "" {
		return
	}
	entries, err := os.ReadDir(r.memo.opts.CacheDir)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(r.memo.opts.CacheDir, e.Name())); err != nil {
			r.t.Fatal(err)
		}
	}
}

// TestRecheckDownloadsOnlyWhatItReads: the recheck of
// TestRecheckLooksUpOnlyTheGainedFiles answers every check from the memo
// and the statistics, so it downloads nothing and makes no directory (it
// downloaded the batch's file into a run directory it removed unread:
// this test failed). Without the memo's answers it reads the batch's file:
// it downloads it and reports what an engine without a memo reports; and
// when that download fails, the recheck errors with the download's error,
// as when it downloaded before the checks, and passes nothing.
func TestRecheckDownloadsOnlyWhatItReads(t *testing.T) { eachCache(t, testRecheckDownloads) }

func testRecheckDownloads(t *testing.T, cache bool) {
	r, s := gainedRig(t, cache, true)
	req := Request{Ref: s, BaseRef: cid("c003"), Onto: true}
	rep, err, downloads, dir := r.watched(req)
	if err != nil || rep.Mode != ModeIncremental || !rep.Passed {
		t.Fatalf("recheck of S: err %v, mode %s (%s), passed %v: %+v", err, rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
	}
	if downloads != 0 || dir {
		t.Errorf("the recheck answered by the memo made %d downloads, a run directory: %v", downloads, dir)
	}

	r.memo.memo = newQueryMemo(memoMaxEntries, memoMaxBytes)
	r.emptyCache()
	r.lake.failPath = "data/t/s1/part-0.parquet"
	rep, err, downloads, _ = r.watched(req)
	if err == nil || !strings.Contains(err.Error(), "injected download failure") || rep.Passed || downloads == 0 {
		t.Fatalf("recheck without the memo, the batch's download failing: err %v, passed %v, %d downloads", err, rep.Passed, downloads)
	}
	r.lake.failPath = ""
	r.memo.memo = newQueryMemo(memoMaxEntries, memoMaxBytes)
	r.emptyCache()
	rep, err, downloads, dir = r.watched(req)
	if err != nil || downloads == 0 || dir == cache { // with a cache, the download goes there
		t.Fatalf("recheck without the memo: err %v, %d downloads, a run directory: %v", err, downloads, dir)
	}
	want, err := r.plain.Run(context.Background(), Request{Dataset: "d", Suite: r.suite, Repository: "r", BatchTime: batchTime,
		Ref: s, BaseRef: cid("c003"), Onto: true})
	if err != nil {
		t.Fatal(err)
	}
	sameReport(t, "recheck without the memo", rep, want)
	if !rep.Passed {
		t.Fatalf("recheck without the memo failed: %+v", rep.Checks)
	}
}

// TestRecheckLateDownloadFailureErrors: the recheck of
// TestMemoRecheckSeesWhatTheTargetGained takes the batch's scans from the
// memo and reads the target's new file (P's) for the unique check; when
// that download fails, the recheck errors with it (the run could not
// read what it audits): nothing passes, and the batch is not judged on it
// either (before, the unique check reported status error, which aborts
// the batch, for a failed download: this test failed).
func TestRecheckLateDownloadFailureErrors(t *testing.T) { eachCache(t, testRecheckLateFailure) }

func testRecheckLateFailure(t *testing.T, cache bool) {
	r := newMemoRig(t, cache, map[string][]string{"data/t/d.parquet": {"50", "150"}, "data/t/e.parquet": {"1000", "2000"}})
	s := r.batch("c001", "s1", "data/t/s1/part-0.parquet", "100", "101", "105")
	if rep := r.audit(Request{Ref: s, BaseRef: cid("c001")}); rep.Mode != ModeIncremental || !rep.Passed {
		t.Fatalf("audit of S: mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
	}
	p := r.batch("c001", "p1", "data/t/p1/part-0.parquet", "105")
	r.publish("c001", "p1", "c001", "c002", r.audit(Request{Ref: p, BaseRef: cid("c001")}))

	r.emptyCache()
	r.lake.failPath = "data/t/p1/part-0.parquet"
	hits, _ := r.memo.memo.stats()
	rep, err, downloads, _ := r.watched(Request{Ref: s, BaseRef: cid("c002"), Onto: true})
	if after, _ := r.memo.memo.stats(); after == hits {
		t.Fatal("the recheck took nothing from the memo: the test shows nothing")
	}
	if err == nil || !strings.Contains(err.Error(), "injected download failure") || rep.Passed || downloads == 0 {
		t.Fatalf("recheck, P's download failing: err %v, passed %v, %d downloads: %+v", err, rep.Passed, downloads, rep.Checks)
	}
	r.lake.failPath = ""
	rep, err, _, _ = r.watched(Request{Ref: s, BaseRef: cid("c002"), Onto: true})
	if u := check(rep, KindUnique); err != nil || rep.Passed || u.Status != schemas.StatusFail || !strings.Contains(u.Message, "data/t/p1/part-0.parquet") {
		t.Fatalf("recheck of S onto P's publish: err %v, passed %v, unique %s %q", err, rep.Passed, u.Status, u.Message)
	}
}

// TestBeforeReadPrecedesTheFirstRead: Request.BeforeRead (the runner
// records a recheck's attempt there, issue 21) is not called for the
// recheck of TestRecheckDownloadsOnlyWhatItReads that the memo and the
// statistics answer; without the memo's answers it is called once, before
// the first download and the first DuckDB statement of the run; and its
// error fails the run, with nothing downloaded, no connection opened and
// nothing passed.
func TestBeforeReadPrecedesTheFirstRead(t *testing.T) { eachCache(t, testBeforeRead) }

func testBeforeRead(t *testing.T, cache bool) {
	r, s := gainedRig(t, cache, true)
	var statements atomic.Int64
	r.memo.onStatement = func(string) { statements.Add(1) }
	defer func() { r.memo.onStatement = nil }()
	type call struct{ downloads, statements, conns int64 }
	var calls []call
	var fail error
	req := Request{Ref: s, BaseRef: cid("c003"), Onto: true, BeforeRead: func(context.Context) error {
		calls = append(calls, call{int64(r.lake.totalDownloads()), statements.Load(), r.memo.memo.conns.Load()})
		return fail
	}}
	rep, err, downloads, _ := r.watched(req)
	if err != nil || !rep.Passed || downloads != 0 {
		t.Fatalf("recheck answered by the memo: err %v, passed %v, %d downloads", err, rep.Passed, downloads)
	}
	if len(calls) != 0 {
		t.Errorf("BeforeRead called %d times for a recheck that read nothing, want 0", len(calls))
	}

	r.memo.memo = newQueryMemo(memoMaxEntries, memoMaxBytes)
	r.emptyCache()
	before, stmts, conns := int64(r.lake.totalDownloads()), statements.Load(), r.memo.memo.conns.Load()
	rep, err, downloads, _ = r.watched(req)
	if err != nil || !rep.Passed || downloads == 0 {
		t.Fatalf("recheck without the memo: err %v, passed %v, %d downloads", err, rep.Passed, downloads)
	}
	if want := []call{{before, stmts, conns}}; len(calls) != 1 || calls[0] != want[0] {
		t.Errorf("BeforeRead calls (downloads, statements, connections so far) %v, want %v: once, before the first", calls, want)
	}

	calls = nil
	fail = errors.New("injected begin failure")
	r.memo.memo = newQueryMemo(memoMaxEntries, memoMaxBytes)
	r.emptyCache()
	stmts, conns = statements.Load(), r.memo.memo.conns.Load()
	rep, err, downloads, _ = r.watched(req)
	if err == nil || !errors.Is(err, fail) || !errors.Is(err, ErrInfrastructure) || rep.Passed {
		t.Fatalf("recheck whose BeforeRead fails: err %v, passed %v", err, rep.Passed)
	}
	if downloads != 0 || statements.Load() != stmts || r.memo.memo.conns.Load() != conns || len(calls) != 1 {
		t.Errorf("recheck whose BeforeRead fails: %d downloads, %d statements, %d connections, BeforeRead called %d times; want none read, called once",
			downloads, statements.Load()-stmts, r.memo.memo.conns.Load()-conns, len(calls))
	}
}
