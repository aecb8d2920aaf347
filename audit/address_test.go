package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// elsewhereLake is a lakeSim whose storage namespace holds none of its
// objects (every address is foreign), and whose diff gives paths and sizes
// only, as lakeFS's does.
type elsewhereLake struct{ *lakeSim }

func (l elsewhereLake) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	objs, err := l.lakeSim.Changed(ctx, repo, base, ref, prefix)
	for i, o := range objs {
		objs[i] = Object{Path: o.Path, Size: o.Size}
	}
	return objs, err
}

func (elsewhereLake) DataPrefix(context.Context, string, string) (string, error) {
	return "mem://elsewhere/", nil
}

// TestForeignAddressOfAnIncrementalAuditWithoutACache: a batch's object
// stored outside the repository's storage namespace fails foreign_addresses
// in every audit, full or incremental, with a download cache or without.
// Without a cache an incremental audit reads only the batch's changes, which
// a diff gives without addresses: the check found no address to judge and
// passed the batch (this test failed for that case before).
func TestForeignAddressOfAnIncrementalAuditWithoutACache(t *testing.T) {
	for _, cache := range []bool{true, false} {
		r := newMemoRig(t, cache, map[string][]string{"data/t/e.parquet": {"1000", "2000"}})
		opts := Options{Source: elsewhereLake{r.lake}, WorkDir: t.TempDir(), History: r.lake}
		if cache {
			opts.CacheDir = t.TempDir()
		}
		e, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		const path = "data/t/s1/part-0.parquet"
		s := r.batch("c001", "s1", path, "100")
		p := r.batch("c001", "p1", "data/t/p1/part-0.parquet", "5000")
		r.publish("c001", "p1", "c001", "c002", r.audit(Request{Ref: p, BaseRef: cid("c001")}))
		for _, req := range []Request{{BaseRef: cid("c001"), Full: true}, {BaseRef: cid("c001")}, {BaseRef: cid("c002"), Onto: true}} {
			req.Dataset, req.Suite, req.Repository, req.Ref, req.BaseName, req.BatchTime = "d", memoSuite(), "r", s, "main", batchTime
			rep, err := e.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("cache=%v, %s audit (onto=%v)", cache, rep.Mode, req.Onto)
			if rep.Mode == ModeFull && !req.Full {
				t.Fatalf("%s: not incremental: %s", name, rep.ModeReason)
			}
			c := check(rep, KindForeignAddress)
			if rep.Passed || c.Status != schemas.StatusFail || !strings.Contains(c.Observed, path) {
				t.Errorf("%s of a batch stored outside the namespace: passed %v, foreign_addresses %s %q", name, rep.Passed, c.Status, c.Observed)
			}
		}
	}
}
