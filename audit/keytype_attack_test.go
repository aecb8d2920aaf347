package audit

import (
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// uniqueSuite is one unique check over table t.
func uniqueSuite() Suite {
	return Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindUnique, Table: "t", Column: "id"}}}
}

// wantUniqueFails audits s onto base full and as it comes (incremental),
// and wants both to fail unique.
func wantUniqueFails(t *testing.T, r *memoRig, s, base string) {
	t.Helper()
	if full := r.audit(Request{Ref: s, BaseRef: base, Full: true}); full.Passed {
		t.Fatalf("the full audit passed: the test shows nothing: %+v", full.Checks)
	}
	rep := r.audit(Request{Ref: s, BaseRef: base})
	u := check(rep, KindUnique)
	if rep.Mode != ModeIncremental {
		t.Fatalf("the audit was not incremental (%s %q): the test shows nothing", rep.Mode, rep.ModeReason)
	}
	if rep.Passed || u.Status != schemas.StatusFail {
		t.Fatalf("incremental audit: passed %v, unique %s %q %q; the full audit fails it", rep.Passed, u.Status, u.Observed, u.Message)
	}
}

// TestUniqueKeyOfAnotherTypeIsNotNarrowedAway: the table's key column is
// BIGINT (files d: 9 and 10, e: 20 and 30, an attested publish on top); a
// writer's batch spells the key as VARCHAR '10'. Read whole (union by
// name) the column is VARCHAR and '10' is there twice: the full audit
// fails unique. The incremental plan must not let it pass by comparing the
// files' BIGINT key ranges as text ('10' is not between '9' and '10').
// Before the fix it passed (holdingKeys cast the files' ranges to the
// batch's type).
func TestUniqueKeyOfAnotherTypeIsNotNarrowedAway(t *testing.T) {
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigOf(t, cache, map[string][]string{"data/t/d.parquet": {"9", "10"}, "data/t/e.parquet": {"20", "30"}}, uniqueSuite())
		s := cid("s1")
		r.lake.branch(t, cid("c001"), s)
		r.lake.commit(s, []string{cid("c001")}, nil)
		r.lake.write(t, s, "data/t/s1/part-0.parquet", "SELECT '10'::VARCHAR AS id")
		wantUniqueFails(t, r, s, cid("c001"))
	})
}

// TestStatisticsOfAMixedScanDoNotNarrowAway: the statistics of files
// computed in one scan take the scan's type: with a VARCHAR file v ('7') beside
// BIGINT files d (9 and 10) and e (20 and 30), d's key range is stored as
// the text '10' to '9'. Once a batch deletes v the table is BIGINT again,
// and a batch with the BIGINT key 10 duplicates d's. Before the fix the
// incremental audit cast d's stored text range to BIGINT (10 to 9, empty),
// read neither file and passed.
func TestStatisticsOfAMixedScanDoNotNarrowAway(t *testing.T) {
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigOf(t, cache, map[string][]string{"data/t/d.parquet": {"9", "10"}, "data/t/e.parquet": {"20", "30"}}, uniqueSuite())
		r.lake.write(t, cid("c000"), "data/t/v.parquet", "SELECT '7'::VARCHAR AS id")
		r.lake.write(t, cid("c001"), "data/t/v.parquet", "SELECT '7'::VARCHAR AS id")
		// s1 adds 500 and is audited incrementally: the unchanged files'
		// statistics are computed in one scan, d's and e's as VARCHAR.
		s1 := r.batch("c001", "s1", "data/t/s1/part-0.parquet", "500")
		rep := r.audit(Request{Ref: s1, BaseRef: cid("c001")})
		if rep.Mode != ModeIncremental || !rep.Passed {
			t.Fatalf("audit of s1: %s %q passed %v %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
		}
		r.publish("c001", "s1", "c001", "c002", rep)
		// s2 deletes v and adds 10.
		s2 := r.batch("c002", "s2", "data/t/s2/part-0.parquet", "10")
		r.lake.remove(t, s2, "data/t/v.parquet")
		wantUniqueFails(t, r, s2, cid("c002"))
	})
}
