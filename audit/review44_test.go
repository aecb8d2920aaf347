package audit

import (
	"context"
	"io"
	"testing"
)

// movedBranch is a Source whose branch moved between a listing and a
// download: a listing of branch gives the entries of commit listed, a
// download at branch the bytes of commit now (lakeFS downloads by ref
// and path, so a download at a branch reads whatever the branch holds
// then).
type movedBranch struct {
	*dirSource
	branch, listed, now string
}

func (s movedBranch) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	if ref == s.branch {
		ref = s.listed
	}
	return s.dirSource.List(ctx, repo, ref, prefix)
}

func (s movedBranch) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	if base == s.branch {
		base = s.listed
	}
	return s.dirSource.Changed(ctx, repo, base, ref, prefix)
}

func (s movedBranch) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	if ref == s.branch {
		ref = s.now
	}
	return s.dirSource.Download(ctx, repo, ref, path, w)
}

// TestReview44BranchReadsDoNotKeyBytesByAnotherAddress: an audit whose
// base is a branch (lakewap audit's -base, the dataset's target by
// default) lists the branch and downloads its files by path. When the
// branch moves in between (a publish rewrote the file at the same path,
// same size), the bytes downloaded are not those of the address the
// listing gave. They were kept under that address all the same, in the
// download cache and the statistics, which the daemon shares (the same
// audit.cache_dir and audit.stats_dir): a later audit of a commit holding
// the listed address read the other bytes, and passed a currency off the
// list that a fresh engine fails.
func TestReview44BranchReadsDoNotKeyBytesByAnotherAddress(t *testing.T) {
	src := newDirSource(t)
	bad, good, batch := cid("bad"), cid("good"), cid("batch")
	const p = "data/t/part-0.parquet"
	src.write(t, bad, p, "SELECT * FROM (VALUES (1::BIGINT, 'EUR'), (2::BIGINT, 'GBP')) v(id, currency)")
	src.write(t, good, p, "SELECT * FROM (VALUES (1::BIGINT, 'EUR'), (2::BIGINT, 'USD')) v(id, currency)")
	src.branch(t, good, batch)
	src.write(t, batch, "data/t/part-1.parquet", "SELECT * FROM (VALUES (3::BIGINT, 'EUR')) v(id, currency)")
	ctx := context.Background()
	lb, _ := src.List(ctx, "r", bad, p)
	lg, _ := src.List(ctx, "r", good, p)
	if len(lb) != 1 || len(lg) != 1 || lb[0].Size != lg[0].Size || lb[0].Address == lg[0].Address {
		t.Fatalf("the two versions of %s must differ in bytes, not in size: %+v %+v", p, lb, lg)
	}
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindAcceptedValues, Table: "t", Column: "currency", Values: []string{"EUR", "USD"}},
		{Kind: KindVolumeChange, Table: "t", MaxGrowthPct: f64(1000)},
	}}
	// main held the bad file when it was listed, the good one when its
	// file was downloaded.
	moved := movedBranch{dirSource: src, branch: "main", listed: bad, now: good}
	cacheDir, statsDir := t.TempDir(), t.TempDir()
	e, err := New(Options{Source: moved, WorkDir: t.TempDir(), CacheDir: cacheDir, StatsDir: statsDir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Run(ctx, Request{Dataset: "d", Suite: suite, Repository: "r", Ref: batch, BaseRef: "main", BatchTime: batchTime}); err != nil {
		t.Fatal(err)
	}
	// Another engine on the same directories (the daemon, or this one
	// later) audits the commit that holds the bad file.
	for _, name := range []string{"the same engine", "an engine sharing its directories"} {
		eng := e
		if name != "the same engine" {
			if eng, err = New(Options{Source: src, WorkDir: t.TempDir(), CacheDir: cacheDir, StatsDir: statsDir}); err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
		}
		rep, err := eng.Run(ctx, Request{Dataset: "d", Suite: suite, Repository: "r", Ref: bad, BaseRef: bad, BatchTime: batchTime})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Passed || rep.Checks[0].Status != "fail" {
			t.Fatalf("%s passed %s at %s, which holds currency GBP: it read the bytes a moved branch gave under the address of another: %+v",
				name, p, bad, rep.Checks[0])
		}
	}
}
