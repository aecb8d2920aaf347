package tests

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/pipeline/lakefs/auditsource"
)

// benchAuditRows is the size of the standard suite's benchmark table.
const benchAuditRows = 5_000_000

// benchAuditFile is the 5-million-row billing table of audit's own
// benchmarks (same path, same query), generated once per machine.
func benchAuditFile(b *testing.B) string {
	b.Helper()
	root := filepath.Join(os.TempDir(), "lakewap-audit-bench-v1")
	file := filepath.Join(root, "main", "gold", "billing", "part-0.parquet")
	if _, err := os.Stat(file); err == nil {
		return file
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tmp := file + ".tmp"
	if _, err := db.Exec(`COPY (SELECT i AS id, (i % 50000)::INTEGER AS customer_id,
			CASE WHEN i % 2 = 0 THEN 'open' ELSE 'paid' END AS status, (hash(i) % 10000) / 100.0 AS amount,
			TIMESTAMP '2025-06-01 12:00:00' - to_seconds(i) AS updated_at
			FROM range(5000000) r(i)) TO '` + tmp + `' (FORMAT parquet)`); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		b.Fatal(err)
	}
	return file
}

// benchSuite is the standard suite: not_null, unique, range, row_count,
// freshness.
func benchSuite() audit.Suite {
	zero, hundred, one := 0.0, 100.0, 1.0
	return audit.Suite{Tables: []audit.Table{{Name: "billing", Path: "gold/billing/"}}, Checks: []audit.Check{
		{Kind: audit.KindNotNull, Table: "billing", Column: "id"},
		{Kind: audit.KindUnique, Table: "billing", Column: "id"},
		{Kind: audit.KindRange, Table: "billing", Column: "amount", Min: &zero, Max: &hundred},
		{Kind: audit.KindRowCount, Table: "billing", Min: &one},
		{Kind: audit.KindFreshness, Table: "billing", Column: "updated_at", MaxAge: "1h"},
	}}
}

// benchHandQuery computes the standard suite's figures in one query.
func benchHandQuery(b *testing.B, db *sql.DB, file string) {
	var n, nulls, dups, out int64
	var lo, hi, latest any
	err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE id IS NULL), count(id) - count(DISTINCT id),
		count(*) FILTER (WHERE amount < 0 OR amount > 100), min(amount), max(amount), max(updated_at)
		FROM read_parquet('`+file+`')`).Scan(&n, &nulls, &dups, &out, &lo, &hi, &latest)
	if err != nil {
		b.Fatal(err)
	}
	if n != benchAuditRows || nulls != 0 || dups != 0 || out != 0 {
		b.Fatal("unexpected figures", n, nulls, dups, out)
	}
}

// BenchmarkSuiteWithDownloadOverHand: the standard suite over the 5M-row
// table on the real lakeFS server (devstack), each run downloading the
// object (no cache: the cold case), against the hand-written query on the
// local file, alternated in the same run. Reported: the median of
// (download + suite) / hand, the medians of each side and of a bare
// download, and peak RSS. The warm sub-benchmark keeps the engine's cache
// (lakeFS is still listed, nothing is downloaded).
func BenchmarkSuiteWithDownloadOverHand(b *testing.B) {
	file := benchAuditFile(b)
	stack, err := devstack.Start(context.Background(), devstack.Options{WorkDir: b.TempDir(), Repository: "lake"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stack.Close() })
	lake, err := lakefs.New(lakefs.Config{Endpoint: stack.LakeFSEndpoint, AccessKeyID: stack.AccessKeyID, SecretAccessKey: stack.SecretAccessKey})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	f, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	err = lake.Upload(ctx, "lake", "main", "gold/billing/part-0.parquet", f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	commit, err := lake.Commit(ctx, "lake", "main", "5M-row billing table", nil)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	req := audit.Request{Dataset: "billing", Suite: benchSuite(), Repository: "lake", Ref: commit,
		BatchTime: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}

	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			cache := ""
			if warm {
				cache = b.TempDir()
			}
			e, err := audit.New(audit.Options{Source: auditsource.Source{Lake: lake}, WorkDir: b.TempDir(), CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if warm {
				if _, err := e.Run(ctx, req); err != nil { // fills the cache
					b.Fatal(err)
				}
			}
			var ratios, suites, hands, downloads []float64
			for b.Loop() {
				start := time.Now()
				rep, err := e.Run(ctx, req)
				if err != nil || !rep.Passed {
					b.Fatal(err, rep.Failed())
				}
				suite := time.Since(start)
				start = time.Now()
				benchHandQuery(b, db, file)
				hand := time.Since(start)
				ratios = append(ratios, float64(suite)/float64(hand))
				suites = append(suites, suite.Seconds()*1000)
				hands = append(hands, hand.Seconds()*1000)
				if !warm {
					downloads = append(downloads, benchDownload(b, lake, commit).Seconds()*1000)
				}
			}
			b.ReportMetric(median(ratios), "suite/hand")
			b.ReportMetric(median(suites), "suite-ms")
			b.ReportMetric(median(hands), "hand-ms")
			if len(downloads) > 0 {
				b.ReportMetric(median(downloads), "download-ms")
			}
			reportPeakRSSMB(b)
		})
	}
}

// benchDownload times one bare download of the object to a local file.
func benchDownload(b *testing.B, lake *lakefs.Client, ref string) time.Duration {
	b.StopTimer()
	defer b.StartTimer()
	f, err := os.CreateTemp(b.TempDir(), "dl-*.parquet")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	start := time.Now()
	if err := lake.Download(context.Background(), "lake", ref, "gold/billing/part-0.parquet", f); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// reportPeakRSSMB reports the process's peak resident memory (VmHWM).
func reportPeakRSSMB(b *testing.B) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
				b.ReportMetric(kb/1024, "peak-RSS-MB")
			}
		}
	}
}
