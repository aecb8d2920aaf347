package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

func memoSuite() Suite {
	return Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "t", Column: "id"},
		{Kind: KindUnique, Table: "t", Column: "id"},
		{Kind: KindRange, Table: "t", Column: "id", Min: f64(0)},
	}}
}

func idsSQL(ids ...string) string {
	return "SELECT * FROM (VALUES " + strings.Join(each(ids, func(id string) string { return "(" + id + "::BIGINT)" }), ", ") + ") v(id)"
}

// cid is a commit id for a name: the engine keys files read at a commit
// by the address its listing gives (without a cache, only at a commit).
func cid(name string) string {
	h := sha256.Sum256([]byte(name))
	return hex.EncodeToString(h[:]) // 64 hex digits, as lakeFS's
}

// memoRig is a target (c001, an attested publish of memoSuite) and two
// engines over it: one with the query memo, one without; with a download
// cache or without.
type memoRig struct {
	t           *testing.T
	lake        *lakeSim
	memo, plain *Engine
	suite       Suite
}

func newMemoRig(t *testing.T, cache bool, old map[string][]string) *memoRig {
	return newMemoRigOf(t, cache, old, memoSuite())
}

// newMemoRigOf is newMemoRig with another suite.
func newMemoRigOf(t *testing.T, cache bool, old map[string][]string, suite Suite) *memoRig {
	lake := newLakeSim(t)
	lake.commit(cid("c000"), nil, nil)
	for p, ids := range old {
		lake.write(t, cid("c000"), p, idsSQL(ids...))
	}
	r := &memoRig{t: t, lake: lake, suite: suite}
	r.engines(cache)
	// c001: an attested publish, so that the audits below are incremental.
	s := r.batch("c000", "s0", "data/t/s0/part-0.parquet", "3000")
	rep := r.audit(Request{Ref: s, BaseRef: cid("c000"), Full: true})
	r.publish("c000", "s0", "c000", "c001", rep)
	return r
}

// eachCache runs f with a download cache and without.
func eachCache(t *testing.T, f func(t *testing.T, cache bool)) {
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprint("cache=", cache), func(t *testing.T) { f(t, cache) })
	}
}

// batch makes commit name (its id) from commit from, writing path.
func (r *memoRig) batch(from, name, path string, ids ...string) string {
	from, name = cid(from), cid(name)
	r.lake.branch(r.t, from, name)
	r.lake.commit(name, []string{from}, nil)
	r.lake.write(r.t, name, path, idsSQL(ids...))
	return name
}

// publish merges sealed (made from foundation) onto target as dst, with
// the attestation of rep (all commits by name).
func (r *memoRig) publish(foundation, sealed, target, dst string, rep schemas.AuditReport) {
	r.t.Helper()
	foundation, sealed, target, dst = cid(foundation), cid(sealed), cid(target), cid(dst)
	if !rep.Passed {
		r.t.Fatalf("publishing %s, whose audit failed: %+v", sealed, rep.Checks)
	}
	r.lake.mergeDirs(r.t, foundation, sealed, target, dst)
	text, err := NewAttestation("d", r.suite, rep, sealed, target).Encode(nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.lake.commit(dst, []string{target, sealed}, map[string]string{MetaAttestation: text})
}

// audit runs req on both engines and wants the same report of both.
func (r *memoRig) audit(req Request) schemas.AuditReport {
	r.t.Helper()
	req.Dataset, req.Suite, req.Repository, req.BatchTime = "d", r.suite, "r", batchTime
	ctx := context.Background()
	got, err := r.memo.Run(ctx, req)
	if err != nil {
		r.t.Fatal(err)
	}
	want, err := r.plain.Run(ctx, req)
	if err != nil {
		r.t.Fatal(err)
	}
	sameReport(r.t, fmt.Sprintf("%s onto %s (onto=%v)", req.Ref, req.BaseRef, req.Onto), got, want)
	return got
}

func check(rep schemas.AuditReport, kind string) schemas.CheckResult {
	for _, c := range rep.Checks {
		if c.Kind == kind {
			return c
		}
	}
	return schemas.CheckResult{}
}

// TestMemoRecheckSeesWhatTheTargetGained: batch S (ids 100-109) passes its
// audit, whose unique check reads the unchanged files whose key ranges
// meet S's (d and d2, ids 50 and 150, 60 and 140: no collision). Then batch P, holding id
// 105, publishes. The recheck of S onto the new head reuses S's own scans
// from the memo, and must still fail unique: the query that counts S's
// keys in the unchanged files now reads P's file too. A key that named
// the batch's view but not the files the query reads itself would answer
// 0 collisions again (checked by dropping the files from the key: the
// recheck then passed).
func TestMemoRecheckSeesWhatTheTargetGained(t *testing.T) { eachCache(t, testMemoRecheck) }

func testMemoRecheck(t *testing.T, cache bool) {
	r := newMemoRig(t, cache, map[string][]string{"data/t/d.parquet": {"50", "150"}, "data/t/d2.parquet": {"60", "140"}, "data/t/e.parquet": {"1000", "2000"}})
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprint(100 + i)
	}
	s := r.batch("c001", "s1", "data/t/s1/part-0.parquet", ids...)
	rep := r.audit(Request{Ref: s, BaseRef: cid("c001")})
	if rep.Mode != ModeIncremental || !rep.Passed {
		t.Fatalf("audit of S: mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
	}
	p := r.batch("c001", "p1", "data/t/p1/part-0.parquet", "105")
	r.publish("c001", "p1", "c001", "c002", r.audit(Request{Ref: p, BaseRef: cid("c001")}))

	hits, _ := r.memo.memo.stats()
	rep = r.audit(Request{Ref: s, BaseRef: cid("c002"), Onto: true})
	after, _ := r.memo.memo.stats()
	if after == hits {
		t.Fatal("the recheck took nothing from the memo: the test shows nothing")
	}
	u := check(rep, KindUnique)
	if rep.Passed || u.Status != schemas.StatusFail || !strings.Contains(u.Message, "data/t/p1/part-0.parquet") {
		t.Fatalf("recheck of S onto P's publish: passed %v, unique %s %q", rep.Passed, u.Status, u.Message)
	}
}

// TestMemoSamePathNewAddress: two batches write the same path with
// different contents, so at different physical addresses. The second one's
// scan must not be the first one's answer: its NULL id fails not_null. A
// key made of the files' paths instead of their addresses would pass it
// (checked: it did).
func TestMemoSamePathNewAddress(t *testing.T) { eachCache(t, testMemoSamePath) }

func testMemoSamePath(t *testing.T, cache bool) {
	r := newMemoRig(t, cache, map[string][]string{"data/t/e.parquet": {"1000", "2000"}})
	const path = "data/t/batch/part-0.parquet"
	rep := r.audit(Request{Ref: r.batch("c001", "s1", path, "10", "11"), BaseRef: cid("c001")})
	if rep.Mode != ModeIncremental || !rep.Passed {
		t.Fatalf("first batch: mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
	}
	rep = r.audit(Request{Ref: r.batch("c001", "s2", path, "12", "NULL"), BaseRef: cid("c001")})
	if c := check(rep, KindNotNull); rep.Passed || c.Status != schemas.StatusFail {
		t.Fatalf("second batch, same path, a NULL id: passed %v, not_null %s %q", rep.Passed, c.Status, c.Observed)
	}
	// The first batch again: its answers come from the memo, unchanged,
	// and the run opens no connection (nothing in DuckDB).
	hits, _ := r.memo.memo.stats()
	conns := r.memo.memo.conns.Load()
	if rep = r.audit(Request{Ref: cid("s1"), BaseRef: cid("c001")}); !rep.Passed {
		t.Fatalf("first batch audited again: %+v", rep.Checks)
	}
	if after, _ := r.memo.memo.stats(); after == hits {
		t.Fatal("the same audit again took nothing from the memo")
	}
	if n := r.memo.memo.conns.Load() - conns; n != 0 {
		t.Fatalf("the same audit again opened %d connections", n)
	}
}

// TestQueryMemoBounds: the memo keeps at most its entries and bytes,
// dropping the least recently used first.
func TestQueryMemoBounds(t *testing.T) {
	m := newQueryMemo(3, 1000+3*memoEntryOverhead)
	k := func(i int) [32]byte { return memoKey("row", fmt.Sprint(i)) }
	for i := range 4 {
		m.put(k(i), []any{int64(i)}, 10)
	}
	if _, ok := m.get(k(0)); ok {
		t.Fatal("a fourth entry kept the first of three")
	}
	m.get(k(1)) // used: k(2) is now the least recently used
	m.put(k(4), []any{"x"}, 700)
	if _, ok := m.get(k(2)); ok {
		t.Fatal("the least recently used entry stayed")
	}
	for _, i := range []int{1, 4} {
		if _, ok := m.get(k(i)); !ok {
			t.Fatalf("entry %d went", i)
		}
	}
	m.put(k(5), []any{"y"}, 700) // over the bytes: the oldest go
	if m.bytes > m.maxBytes || m.lru.Len() != len(m.m) {
		t.Fatalf("memo holds %d bytes in %d entries (%d keys), over its %d bytes", m.bytes, m.lru.Len(), len(m.m), m.maxBytes)
	}
	if _, ok := m.get(k(5)); !ok {
		t.Fatal("the newest entry went")
	}
	m.put(k(6), []any{"z"}, memoMaxValueBytes+1)
	if _, ok := m.get(k(6)); ok {
		t.Fatal("an answer over memoMaxValueBytes was kept")
	}
	if memoKey("a", "bc") == memoKey("ab", "c") {
		t.Fatal("two lists of parts gave one key")
	}
}

// TestMemoLeavesABranch: a file is downloaded by its path at
// the ref, into the cache under the address the listing gave; at a branch,
// which can move between the listing and the download, that may be the
// bytes of another address, so it has no identity and nothing is
// memoized, with a download cache or without (with one, the cache's copy
// had an identity before the fix: this test failed).
func TestMemoLeavesABranch(t *testing.T) { eachCache(t, testMemoLeavesABranch) }

func testMemoLeavesABranch(t *testing.T, cache bool) {
	r := newMemoRig(t, cache, map[string][]string{"data/t/e.parquet": {"1000", "2000"}})
	const branch = "batch-branch"
	r.lake.branch(t, cid("c001"), branch)
	r.lake.commit(branch, []string{cid("c001")}, nil)
	r.lake.write(t, branch, "data/t/b/part-0.parquet", idsSQL("7"))
	hits, misses := r.memo.memo.stats()
	for range 2 {
		if rep := r.audit(Request{Ref: branch, BaseRef: cid("c001")}); !rep.Passed {
			t.Fatalf("audit of the branch: %+v", rep.Checks)
		}
	}
	if h, m := r.memo.memo.stats(); h != hits || m != misses {
		t.Fatalf("audits of a branch used the memo: %d hits, %d misses", h-hits, m-misses)
	}
}

// engines opens the rig's two engines on its lake: memo, and plain
// without the memo and the summaries (with a download cache each when
// cache is set); both close with the test.
func (r *memoRig) engines(cache bool) {
	for _, e := range []**Engine{&r.memo, &r.plain} {
		opts := Options{Source: r.lake, WorkDir: r.t.TempDir(), History: r.lake}
		if cache {
			opts.CacheDir = r.t.TempDir()
		}
		var err error
		if *e, err = New(opts); err != nil {
			r.t.Fatal(err)
		}
		r.t.Cleanup(func() { (*e).Close() })
	}
	r.plain.memo, r.plain.summaries = nil, nil
}
