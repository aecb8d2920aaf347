package auditsource

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
)

// branchMovedOnRead is the daemon's Source with a writer who moves branch
// (reset to commit to) between the audit's listing of it and its first
// download from it: lakeFS downloads by ref and path, so the download
// reads what the branch holds then. The move is made here, at the first
// download, where a writer racing the audit would make it.
type branchMovedOnRead struct {
	Source
	branch, to string
	once       *sync.Once
	t          *testing.T
}

func (s branchMovedOnRead) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	if ref == s.branch {
		s.once.Do(func() {
			if err := s.Lake.DeleteBranch(ctx, repo, s.branch); err != nil {
				s.t.Errorf("the writer's reset of %s: %v", s.branch, err)
			}
			if _, err := s.Lake.EnsureBranch(ctx, repo, s.branch, s.to); err != nil {
				s.t.Errorf("the writer's reset of %s: %v", s.branch, err)
			}
		})
	}
	return s.Source.Download(ctx, repo, ref, path, w)
}

// TestReview49HookCallNamingAHexBranchDoesNotKeyBytesByAnotherAddress: the
// pre-merge hook checks commit_id against lakeFS, and the audit engine
// keeps what it reads at a commit id (listings, downloads by physical
// address, statistics) as immutable. A writer (who has the token every
// action file holds) names in commit_id a branch of its own called like a
// commit id (40 hex digits: lakeFS resolves a ref that is not a full
// commit id as a branch first), pointing at its merge of its source onto
// main's head, so the parents lakeFS gives for that "commit" are the ones
// the hook asks for. The hook audited the branch as if it were a commit:
// listed at the branch (the path at the bad bytes' address), downloaded by
// path after the writer moved the branch (main's good bytes, same size),
// and kept the good bytes under the bad bytes' address in the download
// cache the daemon's runner shares. The audit of the writer's source
// commit, which holds the bad bytes, then read the good ones and passed
// not_null, where a fresh engine fails it: a batch holding that address
// would be published. A branch named with 64 hex digits that are no
// commit's id does the same (lakeFS tries the commit, then the branch).
func TestReview49HookCallNamingAHexBranchDoesNotKeyBytesByAnotherAddress(t *testing.T) {
	for _, hex := range []string{strings.Repeat("ab", 20), strings.Repeat("cd", 32)} {
		t.Run(strconv.Itoa(len(hex)), func(t *testing.T) { hookCallNamingABranch(t, hex) })
	}
}

func hookCallNamingABranch(t *testing.T, hex string) {
	ctx := context.Background()
	s := startRelinkStack(t)
	p := relinkPrefix + "part-0.csv"
	if err := s.lake.Upload(ctx, "lake", "main", p, strings.NewReader(relinkGood)); err != nil {
		t.Fatal(err)
	}
	s.commit(t, "main", "good rows")
	// The writer's source: NULL ids at p, the same size as main's file.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "src", "main"); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "src", p, strings.NewReader(relinkBad)); err != nil {
		t.Fatal(err)
	}
	source := s.commit(t, "src", "null ids")
	// main moves on, so the source does not hold main's head (the hook
	// then audits the merge commit, commit_id, rather than the source).
	if err := s.lake.Upload(ctx, "lake", "main", "other/x", strings.NewReader("y")); err != nil {
		t.Fatal(err)
	}
	head := s.commit(t, "main", "other")
	// The writer's branch named like a commit id, holding its merge of the
	// source onto main's head.
	if _, err := s.lake.EnsureBranch(ctx, "lake", hex, "main"); err != nil {
		t.Fatal(err)
	}
	merge, err := s.lake.Merge(ctx, "lake", "src", hex, "the writer's merge", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.lake.GetCommit(ctx, "lake", hex); err != nil || c.ID != merge || len(c.Parents) != 2 || c.Parents[0] != head || c.Parents[1] != source {
		t.Fatalf("lakeFS resolves %s to %+v (%v); want the writer's merge %s of %s onto %s", hex, c, err, merge, source, head)
	}

	tmp := t.TempDir()
	src := branchMovedOnRead{Source: s.src, branch: hex, to: head, once: new(sync.Once), t: t}
	engine, err := audit.New(audit.Options{Source: src, WorkDir: tmp, CacheDir: filepath.Join(tmp, "cache"),
		StatsDir: filepath.Join(tmp, "stats"), Threads: 1, MemoryLimit: "512MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	svc, err := audit.NewService(audit.ServiceOptions{Engine: engine, Concurrency: 2, Budget: time.Minute,
		Datasets: map[string]audit.Dataset{"d": {Repository: "lake", Target: "main", Suite: relinkSuite}},
		Head:     func(ctx context.Context, repo, ref string) (string, error) { return s.lake.Head(ctx, repo, ref) }})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := audit.NewPreMergeHandler(audit.PreMergeOptions{Guards: svc, Runner: svc, Diff: s.src, Ancestry: s.src,
		Merges: Merges{Lake: s.lake}, Token: "tok", Timeout: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(audit.HookEvent{EventType: audit.EventPreMerge, EventTime: time.Now().UTC().Format(time.RFC3339),
		RepositoryID: "lake", BranchID: "main", SourceRef: source, CommitID: hex})
	req := httptest.NewRequest(http.MethodPost, "/webhooks/lakefs/pre-merge", bytes.NewReader(body))
	req.Header.Set(audit.TokenHeader, "tok")
	rec := httptest.NewRecorder()
	hook.ServeHTTP(rec, req)
	t.Logf("hook call naming branch %s as commit_id: %d %s", hex, rec.Code, strings.TrimSpace(rec.Body.String()))

	// The source commit holds the NULL ids: the engine must fail it, as a
	// fresh one does.
	fresh := newRelinkEngine(t, s.src)
	if got := notNullStatus(relinkAudit(t, fresh, source, head)); !strings.HasPrefix(got, "fail") {
		t.Fatalf("a fresh engine: not_null %s at %s, want fail", got, source)
	}
	if got := notNullStatus(relinkAudit(t, engine, source, head)); !strings.HasPrefix(got, "fail") {
		t.Fatalf("not_null %s at %s, which holds NULL ids: the hook audited branch %s as a commit and kept the bytes of "+
			"another address under the source's (hook answered %d)", got, source, hex, rec.Code)
	}
	if rec.Code != http.StatusForbidden {
		t.Errorf("hook call naming branch %s as commit_id: %d, want 403 (not a merge commit lakeFS has in progress)", hex, rec.Code)
	}
}
