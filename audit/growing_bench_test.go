package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// growingRows is the rows of the batch and of each earlier file.
const growingRows = 200_000

// growingBillingRows is a query of the billing rows of ids from to to (not
// included).
func growingBillingRows(from, to int) string {
	return fmt.Sprintf(`SELECT i AS id, (i %% 50000)::INTEGER AS customer_id, (hash(i) %% 10000) / 100.0 AS amount,
			CASE WHEN i %% 2 = 0 THEN 'open' ELSE 'paid' END AS status FROM range(%d, %d) r(i)`, from, to)
}

// billingSuite is standardSuite without freshness: four checks over the
// whole billing table.
func billingSuite() Suite {
	s := standardSuite()
	s.Checks = s.Checks[:4]
	return s
}

// growingLake is a table of files earlier files of growingRows distinct ids
// each at c-<files> (an attested publish), and a batch branch s-<files>
// made from it adding one file of growingRows new ids. The files are made
// once and kept in the temp dir across benchmark runs.
func growingLake(b *testing.B, files int) (*lakeSim, Suite, string, string) {
	b.Helper()
	root := filepath.Join(os.TempDir(), "lakewap-growing-bench-v2")
	lake := &lakeSim{dirSource: &dirSource{root: root, downloads: map[string]int{}, sums: map[string]string{}}, commits: map[string]CommitInfo{}}
	// Commit ids: a file read at a branch is neither cached nor its statistics
	// kept (review 44).
	base, sealed, head := cid(fmt.Sprintf("b%d", files)), cid(fmt.Sprintf("s%d", files)), cid(fmt.Sprintf("c%d", files))
	a := cid("a")
	part := func(i int) string { return growingBillingRows(i*growingRows, (i+1)*growingRows) }
	if _, err := os.Stat(filepath.Join(root, head, "done")); err != nil {
		for _, ref := range []string{base, sealed, head} {
			os.RemoveAll(filepath.Join(root, ref))
		}
		for i := range files {
			lake.write(b, base, fmt.Sprintf("gold/billing/part-%04d.parquet", i), part(i))
		}
		lake.branch(b, base, sealed)
		lake.write(b, sealed, "gold/billing/batch.parquet", part(files))
		lake.branch(b, base, head)
		os.WriteFile(filepath.Join(root, head, "done"), nil, 0o644)
	}
	suite := billingSuite()
	// The head is an attested publish of the suite (of a batch "a").
	lake.commit(a, []string{base}, nil)
	lake.commit(base, nil, nil)
	rep := passingReport(suite)
	text, err := NewAttestation("billing", suite, rep, a, base).Encode(nil)
	if err != nil {
		b.Fatal(err)
	}
	lake.commit(head, []string{base, a}, map[string]string{MetaAttestation: text})
	lake.commit(sealed, []string{head}, nil)
	return lake, suite, sealed, head
}

// BenchmarkAuditGrowingTable audits the same batch (one file of 200,000 new
// rows; not_null, unique, range and row_count over the whole table) against
// tables of 1, 8 and 64 earlier files of 200,000 rows each, files on local
// disk and in the download cache (nothing downloaded): full (what every
// audit was before incremental audits) and incremental (the table's head is
// an attested publish; lakewap's statistics of the earlier files are in
// memory, as after the audit that added them). It reports the median
// (p50-ms) and the 90th percentile of the iterations.
func BenchmarkAuditGrowingTable(b *testing.B) {
	for _, mode := range []string{ModeFull, ModeIncremental} {
		for _, files := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("mode=%s/files=%d", mode, files), func(b *testing.B) {
				lake, suite, sealed, head := growingLake(b, files)
				e, err := New(Options{Source: lake, WorkDir: b.TempDir(), CacheDir: b.TempDir(), History: lake})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				req := Request{Dataset: "billing", Suite: suite, Repository: "r", Ref: sealed, BaseRef: head, BaseName: "main",
					BatchTime: batchTime, Full: mode == ModeFull}
				ctx := context.Background()
				rep, err := e.Run(ctx, req) // fills the cache and the statistics
				if err != nil {
					b.Fatal(err)
				}
				want := fmt.Sprintf("%d rows", (files+1)*growingRows)
				if !rep.Passed || rep.Mode != mode || rep.Checks[3].Observed != want {
					b.Fatalf("mode %s (%s), passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
				}
				var took []time.Duration
				b.ResetTimer()
				for b.Loop() {
					start := time.Now()
					rep, err := e.Run(ctx, req)
					took = append(took, time.Since(start))
					if err != nil || !rep.Passed {
						b.Fatal(err, rep.Failed())
					}
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "p90-ms")
			})
		}
	}
}
