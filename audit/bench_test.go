package audit

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

const benchRows = 5_000_000

// The benchmarks read their files at commits: a file read at a branch is
// neither cached nor its statistics kept (review 44).
var benchMain, benchBatch = cid("main"), cid("batch")

// benchSource is a dirSource whose main holds one 5-million-row Parquet
// file, generated once and kept in the temp dir across benchmark runs.
func benchSource(b *testing.B) (*dirSource, string) {
	b.Helper()
	root := filepath.Join(os.TempDir(), "lakewap-audit-bench-v2")
	file := filepath.Join(root, benchMain, "gold", "billing", "part-0.parquet")
	if _, err := os.Stat(file); err != nil {
		src := &dirSource{root: root + ".tmp", downloads: map[string]int{}, sums: map[string]string{}}
		os.RemoveAll(src.root)
		src.write(b, benchMain, "gold/billing/part-0.parquet", `SELECT i AS id, (i % 50000)::INTEGER AS customer_id,
			CASE WHEN i % 2 = 0 THEN 'open' ELSE 'paid' END AS status, (hash(i) % 10000) / 100.0 AS amount,
			TIMESTAMP '2025-06-01 12:00:00' - to_seconds(i) AS updated_at
			FROM range(5000000) r(i)`)
		os.RemoveAll(root)
		if err := os.Rename(src.root, root); err != nil {
			b.Fatal(err)
		}
	}
	return &dirSource{root: root, downloads: map[string]int{}, sums: map[string]string{}}, file
}

func standardSuite() Suite {
	return Suite{Tables: []Table{{Name: "billing", Path: "gold/billing/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "billing", Column: "id"},
		{Kind: KindUnique, Table: "billing", Column: "id"},
		{Kind: KindRange, Table: "billing", Column: "amount", Min: f64(0), Max: f64(100)},
		{Kind: KindRowCount, Table: "billing", Min: f64(1)},
		{Kind: KindFreshness, Table: "billing", Column: "updated_at", MaxAge: "1h"},
	}}
}

// BenchmarkStandardSuite is a whole Run of the standard suite over a cached
// 5M-row file: listing, cache lookup, DuckDB setup, one aggregate scan.
func BenchmarkStandardSuite(b *testing.B) {
	src, _ := benchSource(b)
	e, err := New(Options{Source: src, WorkDir: b.TempDir(), CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	req := Request{Dataset: "billing", Repository: "r", Ref: benchMain, BaseName: "main", BatchTime: batchTime, Suite: standardSuite()}
	ctx := context.Background()
	rep, err := e.Run(ctx, req) // fills the cache
	if err != nil {
		b.Fatal(err)
	}
	if !rep.Passed || rep.Checks[3].Observed != "5000000 rows" {
		b.Fatalf("suite did not pass: %+v", rep.Checks)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := e.Run(ctx, req)
		if err != nil || !rep.Passed {
			b.Fatal(err, rep.Failed())
		}
	}
	reportPeakRSS(b)
}

// reportPeakRSS reports the process's peak resident memory (VmHWM), which
// includes generating the data file when this run had to.
func reportPeakRSS(b *testing.B) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				b.ReportMetric(kb/1024, "peak-RSS-MB")
			}
		}
	}
}

// handQuery is the hand-written query computing the standard suite's
// figures over the file.
func handQuery(file string) string {
	return `SELECT count(*), count(*) FILTER (WHERE id IS NULL), count(id) - count(DISTINCT id),
		count(*) FILTER (WHERE amount < 0 OR amount > 100), min(amount), max(amount), max(updated_at)
		FROM read_parquet(` + quoteLiteral(file) + `)`
}

func runHandQuery(b *testing.B, db *sql.DB, q string) {
	var n, nulls, dups, out int64
	var lo, hi, latest any
	if err := db.QueryRow(q).Scan(&n, &nulls, &dups, &out, &lo, &hi, &latest); err != nil {
		b.Fatal(err)
	}
	if n != benchRows || nulls != 0 || dups != 0 || out != 0 {
		b.Fatal("unexpected figures", n, nulls, dups, out)
	}
}

// BenchmarkHandQuery computes the same figures with one hand-written query
// on the same local file and an already open DuckDB.
func BenchmarkHandQuery(b *testing.B) {
	_, file := benchSource(b)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	q := handQuery(file)
	for b.Loop() {
		runHandQuery(b, db, q)
	}
	reportPeakRSS(b)
}

// BenchmarkSuiteOverHand alternates a suite run and the hand query and
// reports the median of their time ratios: on a machine shared with other
// work, interleaving keeps load swings from favouring either side.
func BenchmarkSuiteOverHand(b *testing.B) {
	src, file := benchSource(b)
	e, err := New(Options{Source: src, WorkDir: b.TempDir(), CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	req := Request{Dataset: "billing", Repository: "r", Ref: benchMain, BaseName: "main", BatchTime: batchTime, Suite: standardSuite()}
	ctx := context.Background()
	if _, err := e.Run(ctx, req); err != nil { // fills the cache
		b.Fatal(err)
	}
	q := handQuery(file)
	var ratios []float64
	for b.Loop() {
		start := time.Now()
		if rep, err := e.Run(ctx, req); err != nil || !rep.Passed {
			b.Fatal(err, rep.Failed())
		}
		suite := time.Since(start)
		start = time.Now()
		runHandQuery(b, db, q)
		ratios = append(ratios, float64(suite)/float64(time.Since(start)))
	}
	sort.Float64s(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "suite/hand")
}

// benchFailingSource is benchSource's table with a few failing rows spread
// through it: 50 NULL ids, 50 duplicated ids and 50 negative amounts, so the
// standard suite fails not_null, unique and range.
func benchFailingSource(b *testing.B) *dirSource {
	b.Helper()
	root := filepath.Join(os.TempDir(), "lakewap-audit-bench-fail-v2")
	file := filepath.Join(root, benchMain, "gold", "billing", "part-0.parquet")
	if _, err := os.Stat(file); err != nil {
		src := &dirSource{root: root + ".tmp", downloads: map[string]int{}, sums: map[string]string{}}
		os.RemoveAll(src.root)
		src.write(b, benchMain, "gold/billing/part-0.parquet", `SELECT
			CASE WHEN i % 100000 = 1 THEN NULL WHEN i % 100000 = 3 THEN i - 1 ELSE i END AS id,
			(i % 50000)::INTEGER AS customer_id, CASE WHEN i % 2 = 0 THEN 'open' ELSE 'paid' END AS status,
			CASE WHEN i % 100000 = 5 THEN -1.0 ELSE (hash(i) % 10000) / 100.0 END AS amount,
			TIMESTAMP '2025-06-01 12:00:00' - to_seconds(i) AS updated_at
			FROM range(5000000) r(i)`)
		os.RemoveAll(root)
		if err := os.Rename(src.root, root); err != nil {
			b.Fatal(err)
		}
	}
	return &dirSource{root: root, downloads: map[string]int{}, sums: map[string]string{}}
}

// BenchmarkFailingOverPassing alternates the standard suite over the
// passing 5M-row table and over the same table with failing rows, and
// reports the median of failing/passing time ratios. A failing audit also
// gathers sample rows; the target is at most 1.3x the passing one.
func BenchmarkFailingOverPassing(b *testing.B) {
	pass, _ := benchSource(b)
	fail := benchFailingSource(b)
	ctx := context.Background()
	engine := func(src *dirSource) *Engine {
		e, err := New(Options{Source: src, WorkDir: b.TempDir(), CacheDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.Close() })
		return e
	}
	ep, ef := engine(pass), engine(fail)
	req := Request{Dataset: "billing", Repository: "r", Ref: benchMain, BaseName: "main", BatchTime: batchTime, Suite: standardSuite()}
	check := func(rep schemas.AuditReport, err error, wantPass bool) {
		if err != nil {
			b.Fatal(err)
		}
		if rep.Passed != wantPass {
			b.Fatalf("passed=%v, want %v: %+v", rep.Passed, wantPass, rep.Checks)
		}
		if !wantPass {
			for _, c := range rep.Failed() {
				if len(c.SampleRows) == 0 {
					b.Fatalf("failed check %s has no sample rows: %+v", c.Name, c)
				}
			}
			if len(rep.Failed()) != 3 {
				b.Fatalf("%d checks failed, want not_null, unique and range: %+v", len(rep.Failed()), rep.Failed())
			}
		}
	}
	rep, err := ep.Run(ctx, req) // fill the caches
	check(rep, err, true)
	rep, err = ef.Run(ctx, req)
	check(rep, err, false)
	var ratios []float64
	var passing, failing []time.Duration
	for b.Loop() {
		start := time.Now()
		rep, err := ep.Run(ctx, req)
		p := time.Since(start)
		check(rep, err, true)
		start = time.Now()
		rep, err = ef.Run(ctx, req)
		f := time.Since(start)
		check(rep, err, false)
		ratios = append(ratios, float64(f)/float64(p))
		passing, failing = append(passing, p), append(failing, f)
	}
	sort.Float64s(ratios)
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Milliseconds())
	}
	b.ReportMetric(ratios[len(ratios)/2], "failing/passing")
	b.ReportMetric(med(passing), "passing-ms")
	b.ReportMetric(med(failing), "failing-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDistrustOverTrust alternates the standard suite on an engine
// that keeps DuckDB off the Parquet statistics (as every engine does) and
// on one that lets the optimizers use them (as before issue 12), over the
// passing and the failing 5M-row table, and reports the median ratios of
// their times: what reading the data instead of the footer's claims costs.
func BenchmarkDistrustOverTrust(b *testing.B) {
	pass, _ := benchSource(b)
	fail := benchFailingSource(b)
	ctx := context.Background()
	engine := func(src *dirSource, trust bool) *Engine {
		e, err := New(Options{Source: src, WorkDir: b.TempDir(), CacheDir: b.TempDir(), trustStatistics: trust})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.Close() })
		return e
	}
	req := Request{Dataset: "billing", Repository: "r", Ref: benchMain, BaseName: "main", BatchTime: batchTime, Suite: standardSuite()}
	timed := func(e *Engine, wantPass bool) time.Duration {
		start := time.Now()
		rep, err := e.Run(ctx, req)
		if err != nil || rep.Passed != wantPass {
			b.Fatal(err, rep.Failed())
		}
		return time.Since(start)
	}
	type side struct {
		distrust, trust *Engine
		pass            bool
		ratios          []float64
		d, t            []time.Duration
	}
	sides := []*side{{distrust: engine(pass, false), trust: engine(pass, true), pass: true},
		{distrust: engine(fail, false), trust: engine(fail, true)}}
	for _, s := range sides { // fill the caches
		timed(s.distrust, s.pass)
		timed(s.trust, s.pass)
	}
	for b.Loop() {
		for _, s := range sides {
			d, t := timed(s.distrust, s.pass), timed(s.trust, s.pass)
			s.ratios = append(s.ratios, float64(d)/float64(t))
			s.d, s.t = append(s.d, d), append(s.t, t)
		}
	}
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Milliseconds())
	}
	for _, s := range sides {
		name := map[bool]string{true: "passing", false: "failing"}[s.pass]
		sort.Float64s(s.ratios)
		b.ReportMetric(s.ratios[len(s.ratios)/2], name+"-distrust/trust")
		b.ReportMetric(med(s.d), name+"-distrust-ms")
		b.ReportMetric(med(s.t), name+"-trust-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSmallBatchAudit is one whole Run of the demo's five checks
// (scope batch) over a batch that adds one 100-row Parquet object, as each
// batch of tests/'s BenchmarkWAPCycle is audited: the engine's fixed
// cost per run (issue 13), with no download cache.
func BenchmarkSmallBatchAudit(b *testing.B) {
	src := &dirSource{root: b.TempDir(), downloads: map[string]int{}, sums: map[string]string{}}
	src.write(b, benchMain, "gold/billing_fact/batch=0/part-0.parquet", smallBillingRows)
	src.branch(b, benchMain, benchBatch)
	src.write(b, benchBatch, "gold/billing_fact/batch=1/part-0.parquet", smallBillingRows)
	e, err := New(Options{Source: src, WorkDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	zero, one := 0.0, 1.0
	suite := Suite{Tables: []Table{{Name: "billing_fact", Path: "gold/billing_fact/"}}, Checks: []Check{
		{Name: "billing_id_not_null", Kind: KindNotNull, Table: "billing_fact", Columns: []string{"billing_id", "customer_id"}, Scope: "batch"},
		{Name: "billing_id_unique", Kind: KindUnique, Table: "billing_fact", Columns: []string{"billing_id"}, Scope: "batch"},
		{Name: "amount_not_negative", Kind: KindRange, Table: "billing_fact", Column: "amount_cents", Min: &zero, Scope: "batch"},
		{Name: "has_rows", Kind: KindRowCount, Table: "billing_fact", Min: &one, Scope: "batch"},
		{Name: "known_currency", Kind: KindAcceptedValues, Table: "billing_fact", Column: "currency", Values: []string{"EUR", "USD", "GBP"}, Severity: "warn", Scope: "batch"},
	}}
	req := Request{Dataset: "billing", Repository: "r", Ref: benchBatch, BaseRef: benchMain, BaseName: "main", BatchTime: batchTime, Suite: suite}
	ctx := context.Background()
	for b.Loop() {
		rep, err := e.Run(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if !rep.Passed || rep.Checks[3].Observed != "100 rows" {
			b.Fatalf("want a pass over the batch's 100 rows: %+v", rep.Checks)
		}
	}
}

// smallBillingRows are 100 rows of the demo's good billing table.
const smallBillingRows = `SELECT 'INV-' || lpad(i::VARCHAR, 7, '0') AS billing_id, 'CUST-' || (i % 97)::VARCHAR AS customer_id,
	(100 + i * 37 % 50000)::BIGINT AS amount_cents, ['EUR','USD','GBP'][1 + i % 3] AS currency
	FROM range(100) t(i)`
