package auditsource

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// Attacks on the engine's kept listings of commits (audit/listcache.go)
// by a writer that links a path to new bytes claiming an old object's
// checksum and size. lakeFS compares entries by identity (size, checksum,
// metadata, content type), so its diffs do not name such a path, while
// the path's physical address, and its bytes, are new. An audit reads the
// bytes at the address its listing gives (from its download cache when it
// read that address before), so a listing carried over from another
// commit by a diff would read the old, audited bytes while the merge
// publishes the new ones. The engine that audited the old bytes must judge
// the new ones as a fresh engine does.

// relinkStack is a devstack with a lakewap client and a raw API client
// (for linkPhysicalAddress, which lakewap's client does not call).
type relinkStack struct {
	lake *lakefs.Client
	api  *apigen.ClientWithResponses
	src  Source
}

func startRelinkStack(t *testing.T) relinkStack {
	t.Helper()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: t.TempDir(), Repository: "lake"})
	lake, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	api, err := apigen.NewClientWithResponses(strings.TrimRight(stack.LakeFSEndpoint, "/")+"/api/v1",
		apigen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.SetBasicAuth(stack.AccessKeyID, stack.SecretAccessKey)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return relinkStack{lake: lake, api: api, src: Source{Lake: lake}}
}

// relink writes content at a fresh physical address of the repository's
// storage (the local blockstore's files) and links path on branch to it,
// claiming checksum and size.
func (s relinkStack) relink(t *testing.T, branch, path, content, checksum string, size int64) {
	t.Helper()
	ctx := context.Background()
	no := false
	loc, err := s.api.GetPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.GetPhysicalAddressParams{Path: path, Presign: &no})
	if err != nil || loc.JSON200 == nil || loc.JSON200.PhysicalAddress == nil {
		t.Fatalf("physical address: %v %s", err, loc.Body)
	}
	full := *loc.JSON200.PhysicalAddress
	file := strings.TrimPrefix(full, "local://")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(full, "/lake/data/")
	if i < 0 {
		t.Fatalf("physical address %s is not under the repository's storage", full)
	}
	addr := "local://lake/" + full[i+len("/lake/"):]
	link, err := s.api.LinkPhysicalAddressWithResponse(ctx, "lake", branch, &apigen.LinkPhysicalAddressParams{Path: path},
		apigen.LinkPhysicalAddressJSONRequestBody{Staging: apigen.StagingLocation{PhysicalAddress: &addr}, Checksum: checksum, SizeBytes: size})
	if err != nil || link.StatusCode() != http.StatusOK {
		t.Fatalf("link %s: %v HTTP %d %s", path, err, link.StatusCode(), link.Body)
	}
}

func (s relinkStack) commit(t *testing.T, branch, msg string) string {
	t.Helper()
	c, err := s.lake.Commit(context.Background(), "lake", branch, msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const relinkPrefix = "gold/t/"

var relinkSuite = audit.Suite{Tables: []audit.Table{{Name: "t", Path: relinkPrefix, Format: "csv"}}, Checks: []audit.Check{
	{Kind: audit.KindNotNull, Table: "t", Column: "id"}, // scope table: the whole table at the ref
}}

// newRelinkEngine is an engine with a download cache, as deploy/lakewap.yaml
// runs it.
func newRelinkEngine(t *testing.T, src Source) *audit.Engine {
	t.Helper()
	tmp := t.TempDir()
	e, err := audit.New(audit.Options{Source: src, WorkDir: tmp, CacheDir: filepath.Join(tmp, "cache"), Threads: 1, MemoryLimit: "512MB"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func relinkAudit(t *testing.T, e *audit.Engine, ref, base string) schemas.AuditReport {
	t.Helper()
	rep, err := e.Run(context.Background(), audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: ref, BaseRef: base})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func notNullStatus(rep schemas.AuditReport) string {
	for _, c := range rep.Checks {
		if c.Kind == audit.KindNotNull {
			return c.Status + " " + c.Observed
		}
	}
	return "missing"
}

// batchOne seeds main and commits batch 1's good rows at relinkPrefix on
// branch a: main's head, batch 1's commit, and its listing (one object).
func (s relinkStack) batchOne(t *testing.T) (mainHead, s1 string, l1 []audit.Object) {
	t.Helper()
	ctx := context.Background()
	if err := s.lake.Upload(ctx, "lake", "main", "other/seed", strings.NewReader("z")); err != nil {
		t.Fatal(err)
	}
	mainHead = s.commit(t, "main", "seed")
	p := relinkPrefix + "batch=1/part-0.csv"
	if _, err := s.lake.EnsureBranch(ctx, "lake", "a", "main"); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "a", p, strings.NewReader(relinkGood)); err != nil {
		t.Fatal(err)
	}
	s1 = s.commit(t, "a", "batch 1")
	l1, err := s.src.List(ctx, "lake", s1, relinkPrefix)
	if err != nil || len(l1) != 1 {
		t.Fatalf("list batch 1: %v %+v", err, l1)
	}
	return mainHead, s1, l1
}

// batchOneOnMain seeds main, branches branch from the seed (a writer's
// other branch) and commits batch 1's good rows on main: the path, main's
// head and its listing (one object).
func (s relinkStack) batchOneOnMain(t *testing.T, branch string) (p, head string, l1 []audit.Object) {
	t.Helper()
	ctx := context.Background()
	if err := s.lake.Upload(ctx, "lake", "main", "other/seed", strings.NewReader("z")); err != nil {
		t.Fatal(err)
	}
	s.commit(t, "main", "seed")
	if _, err := s.lake.EnsureBranch(ctx, "lake", branch, "main"); err != nil {
		t.Fatal(err)
	}
	p = relinkPrefix + "batch=1/part-0.csv"
	if err := s.lake.Upload(ctx, "lake", "main", p, strings.NewReader(relinkGood)); err != nil {
		t.Fatal(err)
	}
	head = s.commit(t, "main", "batch 1")
	l1, err := s.src.List(ctx, "lake", head, relinkPrefix)
	if err != nil || len(l1) != 1 {
		t.Fatalf("list main: %v %+v", err, l1)
	}
	return p, head, l1
}

const (
	relinkGood = "id,x\n1,a\n2,b\n"
	relinkBad  = "id,x\n,aa\n,bb\n" // same size, NULL ids
)

// Batch 1 writes good rows at P and is audited (not merged). Batch 2, on a
// branch of main without P, links P to NULL ids claiming batch 1's
// checksum and size: the audit of batch 2 by the engine that audited
// batch 1 fails not_null, as a fresh engine's does. (Before the fix the
// engine derived batch 2's listing from batch 1's by the two-dot diff,
// which does not name P, kept batch 1's address and read its cached good
// rows: not_null passed, and the merge published the NULL ids.)
func TestAuditReadsARelinkedPathOfAnotherBranchAtItsOwnAddress(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	mainHead, s1, l1 := s.batchOne(t)
	p := l1[0].Path
	if _, err := s.lake.EnsureBranch(ctx, "lake", "b", "main"); err != nil {
		t.Fatal(err)
	}
	s.relink(t, "b", p, relinkBad, l1[0].Checksum, l1[0].Size)
	s2 := s.commit(t, "b", "batch 2")

	e := newRelinkEngine(t, s.src)
	if rep := relinkAudit(t, e, s1, mainHead); !rep.Passed {
		t.Fatalf("batch 1 (good rows) failed: not_null %s", notNullStatus(rep))
	}
	warm := relinkAudit(t, e, s2, mainHead)
	fresh := relinkAudit(t, newRelinkEngine(t, s.src), s2, mainHead)
	if fresh.Passed {
		t.Fatalf("a fresh engine passed batch 2 (NULL ids at %s): not_null %s", p, notNullStatus(fresh))
	}
	if warm.Passed {
		t.Errorf("batch 2 links %s to NULL ids claiming batch 1's checksum: the engine that audited batch 1 passed it (not_null %s), a fresh engine failed it (not_null %s)",
			p, notNullStatus(warm), notNullStatus(fresh))
	}
}

// Batch 1 writes good rows at P and is merged into main; the engine audits
// main's head. A writer's branch x, made from main before P, links P to
// NULL ids claiming batch 1's checksum and size; batch 2's writer merges x
// into batch 2's branch. lakeFS's merge takes x's P (same identity: the
// source's entry), so batch 2's commit has P at the new address while no
// diff of lakeFS names P, and merging batch 2 publishes the NULL ids. The
// table-wide not_null of batch 2 fails on the engine that listed main's
// head, as on a fresh one. (Before the fix the engine derived batch 2's
// listing from main's by the two-dot diff and read main's good rows.)
func TestAuditReadsAPathRelinkedByAMergeAtItsOwnAddress(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	_, s1, l1 := s.batchOne(t)
	p := l1[0].Path
	if _, err := s.lake.EnsureBranch(ctx, "lake", "x", "main"); err != nil {
		t.Fatal(err)
	}
	s.relink(t, "x", p, relinkBad, l1[0].Checksum, l1[0].Size)
	s.commit(t, "x", "the writer's other branch")
	head, err := s.lake.Merge(ctx, "lake", s1, "main", "publish batch 1", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newRelinkEngine(t, s.src)
	if rep := relinkAudit(t, e, head, ""); !rep.Passed {
		t.Fatalf("main's head (good rows) failed: not_null %s", notNullStatus(rep))
	}
	if _, err := s.lake.EnsureBranch(ctx, "lake", "b", head); err != nil {
		t.Fatal(err)
	}
	s2, err := s.lake.Merge(ctx, "lake", "x", "b", "batch 2 takes x", nil)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := s.src.List(ctx, "lake", s2, relinkPrefix)
	if err != nil || len(l2) != 1 || l2[0].Address == l1[0].Address {
		t.Fatalf("batch 2 should hold %s at x's address: %v %+v", p, err, l2)
	}

	warm := relinkAudit(t, e, s2, head)
	fresh := relinkAudit(t, newRelinkEngine(t, s.src), s2, head)
	if fresh.Passed {
		t.Fatalf("a fresh engine passed batch 2 (NULL ids at %s): not_null %s", p, notNullStatus(fresh))
	}
	if warm.Passed {
		t.Errorf("batch 2 merges in %s at NULL ids claiming main's checksum: the engine that audited main passed it (not_null %s), a fresh engine failed it (not_null %s)",
			p, notNullStatus(warm), notNullStatus(fresh))
	}
	// What is at stake: merging batch 2 publishes x's bytes.
	if _, err := s.lake.Merge(ctx, "lake", s2, "main", "publish batch 2", nil); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := s.lake.Download(ctx, "lake", "main", p, &sb); err != nil {
		t.Fatal(err)
	}
	if sb.String() != relinkBad {
		t.Logf("main serves %q after merging batch 2 (not x's bytes: the stake is smaller than this test assumes)", sb.String())
	}
}

// relinkedResult is rep's relinked_objects result, if any.
func relinkedResult(rep schemas.AuditReport) (schemas.CheckResult, bool) {
	for _, c := range rep.Checks {
		if c.Kind == audit.KindRelinked {
			return c, true
		}
	}
	return schemas.CheckResult{}, false
}

// The batch's own checks (scope: batch, the unaudited-objects rule) see
// what lakeFS's diff of the sealed commit against main names. A writer
// that merges into the batch's branch a branch linking P (on main, good
// rows) to NULL ids claiming main's checksum and size changes P's bytes
// with no diff naming P, and merging the batch publishes them. The audit
// must refuse such a relinked object, naming it (check relinked_objects),
// with only batch-scope checks as with the default scope; an honest
// re-upload of the same bytes at P (a new address, the same bytes) still
// passes. (Before the fix the batch-scope suite passed the batch.)
func TestRelinkedObjectIsRefusedUnlessItsBytesAreTheSame(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	p, head, l1 := s.batchOneOnMain(t, "x")
	s.relink(t, "x", p, relinkBad, l1[0].Checksum, l1[0].Size)
	s.commit(t, "x", "the writer's other branch")

	// Batch 2 (bad): its own rows elsewhere, and x merged in.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "b", head); err != nil {
		t.Fatal(err)
	}
	own := relinkPrefix + "batch=2/part-0.csv"
	if err := s.lake.Upload(ctx, "lake", "b", own, strings.NewReader("id,x\n3,c\n")); err != nil {
		t.Fatal(err)
	}
	s.commit(t, "b", "batch 2's own rows")
	bad, err := s.lake.Merge(ctx, "lake", "x", "b", "batch 2 takes x", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Batch 3 (honest): P linked again to the same bytes at a new address,
	// by the same merge. Batch 4 (honest): the same bytes uploaded again
	// at P (lakeFS may keep main's entry: the identity is the same).
	if _, err := s.lake.EnsureBranch(ctx, "lake", "y", "x~1"); err != nil {
		t.Fatal(err)
	}
	s.relink(t, "y", p, relinkGood, l1[0].Checksum, l1[0].Size)
	s.commit(t, "y", "the same bytes at a new address")
	if _, err := s.lake.EnsureBranch(ctx, "lake", "c", head); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "c", relinkPrefix+"batch=3/part-0.csv", strings.NewReader("id,x\n4,d\n")); err != nil {
		t.Fatal(err)
	}
	s.commit(t, "c", "batch 3's own rows")
	relinkedSame, err := s.lake.Merge(ctx, "lake", "y", "c", "batch 3 takes y", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l3, err := s.src.List(ctx, "lake", relinkedSame, relinkPrefix+"batch=1/"); err != nil || len(l3) != 1 || l3[0].Address == l1[0].Address {
		t.Fatalf("batch 3 should hold %s at y's address: %v %+v", p, err, l3)
	}
	if _, err := s.lake.EnsureBranch(ctx, "lake", "d", head); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "d", p, strings.NewReader(relinkGood)); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "d", relinkPrefix+"batch=4/part-0.csv", strings.NewReader("id,x\n5,e\n")); err != nil {
		t.Fatal(err)
	}
	reuploaded := s.commit(t, "d", "batch 4")

	scopes := map[string]audit.Suite{
		"batch": {Tables: relinkSuite.Tables, Checks: []audit.Check{{Kind: audit.KindNotNull, Table: "t", Column: "id", Scope: audit.ScopeBatch}}},
		"table": relinkSuite,
	}
	for name, suite := range scopes {
		t.Run(name, func(t *testing.T) {
			e := newRelinkEngine(t, s.src)
			run := func(ref string) schemas.AuditReport {
				rep, err := e.Run(ctx, audit.Request{Dataset: "d", Suite: suite, Repository: "lake", Ref: ref, BaseRef: head, BaseName: "main"})
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			rep := run(bad)
			res, ok := relinkedResult(rep)
			if rep.Passed || !ok || res.Status != schemas.StatusFail || !strings.Contains(res.Observed, p) {
				t.Errorf("batch 2 relinks %s to NULL ids claiming main's checksum: passed=%v relinked_objects=%+v (present %v), not_null %s",
					p, rep.Passed, res, ok, notNullStatus(rep))
			}
			for name, ref := range map[string]string{"batch 3 (linked again to main's bytes)": relinkedSame, "batch 4 (uploaded main's bytes again)": reuploaded} {
				if rep := run(ref); !rep.Passed {
					t.Errorf("%s at %s: failed %+v", name, p, rep.Failed())
				}
			}
		})
	}
	// What is at stake: merging batch 2 publishes x's bytes.
	if _, err := s.lake.Merge(ctx, "lake", bad, "main", "publish batch 2", nil); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := s.lake.Download(ctx, "lake", "main", p, &sb); err != nil {
		t.Fatal(err)
	}
	if sb.String() != relinkBad {
		t.Logf("main serves %q after merging batch 2 (not x's bytes)", sb.String())
	}
}

// A writer's branch stages main's path P at an object of another
// repository (outside this one's storage namespace) holding the same bytes
// and claiming main's checksum and size; a batch merges that branch in. P
// is in no diff, so foreign_addresses does not see it, and its bytes equal
// main's today, but their owner can change them after the publish while
// the engine's download cache, statistics, query memo and derived listings
// take an address's bytes as fixed. relinked_objects must refuse it,
// naming P and saying it lies outside the storage namespace. (Before the
// fix the batch passed: equal bytes passed wherever they lay.)
func TestRelinkedObjectOfTheSameBytesOutsideTheNamespaceIsRefused(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	if err := s.lake.CreateRepository(ctx, "other", "local://other", "main"); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "other", "main", "private/part-0.csv", strings.NewReader(relinkGood)); err != nil {
		t.Fatal(err)
	}
	theirs, err := s.lake.List(ctx, "other", "main", "private/")
	if err != nil || len(theirs) != 1 || !strings.Contains(theirs[0].PhysicalAddress, "/other/data/") {
		t.Fatalf("the other repository's object: %v %+v", err, theirs)
	}
	p, head, l1 := s.batchOneOnMain(t, "x")
	resp, err := s.api.StageObjectWithResponse(ctx, "lake", "x", &apigen.StageObjectParams{Path: p},
		apigen.StageObjectJSONRequestBody{PhysicalAddress: theirs[0].PhysicalAddress, Checksum: l1[0].Checksum, SizeBytes: l1[0].Size})
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("stage %s at %s: %v HTTP %d %s", p, theirs[0].PhysicalAddress, err, resp.StatusCode(), resp.Body)
	}
	s.commit(t, "x", "the writer's other branch")
	if _, err := s.lake.EnsureBranch(ctx, "lake", "b", head); err != nil {
		t.Fatal(err)
	}
	if err := s.lake.Upload(ctx, "lake", "b", relinkPrefix+"batch=2/part-0.csv", strings.NewReader("id,x\n3,c\n")); err != nil {
		t.Fatal(err)
	}
	s.commit(t, "b", "batch 2's own rows")
	bad, err := s.lake.Merge(ctx, "lake", "x", "b", "batch 2 takes x", nil)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := s.src.List(ctx, "lake", bad, relinkPrefix+"batch=1/")
	if err != nil || len(l2) != 1 || l2[0].Address == l1[0].Address {
		t.Fatalf("batch 2 should hold %s at the other repository's address: %v %+v", p, err, l2)
	}
	e := newRelinkEngine(t, s.src)
	rep, err := e.Run(ctx, audit.Request{Dataset: "d", Suite: relinkSuite, Repository: "lake", Ref: bad, BaseRef: head, BaseName: "main"})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := relinkedResult(rep)
	if rep.Passed || !ok || res.Status != schemas.StatusFail || !strings.Contains(res.Observed, p) || !strings.Contains(res.Message, "storage namespace") {
		t.Errorf("batch 2 holds %s at %s (another repository's, the same bytes as main's): passed=%v relinked_objects=%+v (present %v)",
			p, l2[0].Address, rep.Passed, res, ok)
	}
}
