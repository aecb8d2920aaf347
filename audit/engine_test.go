package audit

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/lakewap/lakewap/schemas"
)

// dirSource is a lakeFS stand-in: root/<ref>/<path> are the objects of ref.
type dirSource struct {
	root string

	mu        sync.Mutex
	downloads map[string]int    // ref:path -> count
	sums      map[string]string // file:size:mtime -> checksum, as lakeFS keeps it
	failPath  string            // Download of this path fails
}

func newDirSource(t testing.TB) *dirSource {
	return &dirSource{root: t.TempDir(), downloads: map[string]int{}, sums: map[string]string{}}
}

// newBatchSource is a dirSource with an empty main, for a test that
// writes branch b1's files itself.
func newBatchSource(t testing.TB) *dirSource {
	t.Helper()
	src := newDirSource(t)
	if err := os.MkdirAll(filepath.Join(src.root, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	return src
}

// oneFileBatch is a dirSource whose branch b1 holds b as table t's one
// file, t/part-0.parquet, over an empty main.
func oneFileBatch(t testing.TB, b []byte) *dirSource {
	t.Helper()
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b1", "t", "part-0.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return src
}

func (s *dirSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	var out []Object
	dir := filepath.Join(s.root, ref)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if !strings.HasPrefix(rel, prefix) {
			return nil
		}
		sum, size, err := s.checksum(p)
		if err != nil {
			return err
		}
		// Each distinct content is stored once, as lakeFS would give each
		// write an address of its own.
		out = append(out, Object{Path: rel, Checksum: sum, Address: "local://" + sum, Size: size})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

func (s *dirSource) checksum(p string) (string, int64, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", 0, err
	}
	key := fmt.Sprint(p, st.Size(), st.ModTime().UnixNano())
	s.mu.Lock()
	sum, ok := s.sums[key]
	s.mu.Unlock()
	if ok {
		return sum, st.Size(), nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", 0, err
	}
	h := sha256.Sum256(b)
	sum = hex.EncodeToString(h[:16])
	s.mu.Lock()
	s.sums[key] = sum
	s.mu.Unlock()
	return sum, st.Size(), nil
}

func (s *dirSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	cur, err := s.List(ctx, repo, ref, prefix)
	if err != nil {
		return nil, err
	}
	old, err := s.List(ctx, repo, base, prefix)
	if err != nil {
		return nil, err
	}
	was := map[string]string{}
	for _, o := range old {
		was[o.Path] = o.Checksum
	}
	var out []Object
	for _, o := range cur {
		if was[o.Path] != o.Checksum {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *dirSource) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	s.mu.Lock()
	s.downloads[ref+":"+path]++
	fail := s.failPath == path
	s.mu.Unlock()
	if fail {
		return errors.New("injected download failure")
	}
	f, err := os.Open(filepath.Join(s.root, ref, filepath.FromSlash(path)))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func (s *dirSource) downloaded(ref, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[ref+":"+path]
}

func (s *dirSource) totalDownloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.downloads {
		n += c
	}
	return n
}

// write makes an object at ref from a DuckDB query (COPY ... TO).
func (s *dirSource) write(t testing.TB, ref, path, query string) {
	t.Helper()
	dst := filepath.Join(s.root, ref, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	format := "parquet"
	switch {
	case strings.HasSuffix(path, ".csv"):
		format = "csv, header true"
	case strings.HasSuffix(path, ".jsonl"):
		format = "json"
	}
	copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT %s)", query, quoteLiteral(dst), format))
}

// copy makes ref a copy of from (a branch).
func (s *dirSource) branch(t testing.TB, from, ref string) {
	t.Helper()
	src := filepath.Join(s.root, from)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(s.root, ref, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (s *dirSource) remove(t testing.TB, ref, path string) {
	t.Helper()
	if err := os.Remove(filepath.Join(s.root, ref, filepath.FromSlash(path))); err != nil {
		t.Fatal(err)
	}
}

func copySQL(t testing.TB, q string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

var batchTime = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// billingRows is a clean billing table: ids 1..n, amount 0..99, status
// open|paid, updated_at within the last n minutes before batchTime.
func billingRows(from, n int) string {
	return fmt.Sprintf(`SELECT i::BIGINT AS id, (i %% 50)::INTEGER AS customer_id,
		CASE WHEN i %% 2 = 0 THEN 'open' ELSE 'paid' END AS status,
		(i %% 100)::DOUBLE AS amount,
		TIMESTAMP '2025-06-01 12:00:00' - to_minutes(i::BIGINT) AS updated_at
		FROM range(%d, %d) r(i)`, from, from+n)
}

// fixture: main has billing (1000 rows in two files) and customers (50);
// branch "b1" adds billing/part-2 with 100 more rows.
func fixture(t *testing.T) *dirSource {
	src := newDirSource(t)
	src.write(t, "main", "gold/billing/part-0.parquet", billingRows(1, 500))
	src.write(t, "main", "gold/billing/part-1.parquet", billingRows(501, 500))
	src.write(t, "main", "gold/billing/_SUCCESS.parquet", "SELECT 1 AS marker") // not a table file
	src.write(t, "main", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 50) r(i)")
	src.branch(t, "main", "b1")
	return src
}

func f64(v float64) *float64 { return &v }

var tables = []Table{
	{Name: "billing", Path: "gold/billing/"},
	{Name: "customers", Path: "gold/customers/"},
}

func newEngine(t testing.TB, src Source, cache string) *Engine {
	t.Helper()
	e, err := New(Options{Source: src, WorkDir: t.TempDir(), CacheDir: cache, MemoryLimit: "512MB", Threads: 2, SampleRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.bitmapUniqueBytes = 0 // the tables of tests are small: count integer keys with a bitmap anyway
	return e
}

func audit(t *testing.T, e *Engine, ref string, checks ...Check) schemas.AuditReport {
	t.Helper()
	rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: ref, BaseRef: "main",
		BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: checks}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func only(t *testing.T, rep schemas.AuditReport) schemas.CheckResult {
	t.Helper()
	if len(rep.Checks) != 1 {
		t.Fatalf("got %d results, want 1: %+v", len(rep.Checks), rep.Checks)
	}
	return rep.Checks[0]
}

// standard is a suite every check of which passes on the fixture.
func standard() []Check {
	return []Check{
		{Kind: KindNotNull, Table: "billing", Columns: []string{"id", "status"}},
		{Kind: KindUnique, Table: "billing", Column: "id"},
		{Kind: KindUnique, Table: "billing", Columns: []string{"customer_id", "id"}},
		{Kind: KindAcceptedValues, Table: "billing", Column: "status", Values: []string{"open", "paid", "void"}},
		{Kind: KindRange, Table: "billing", Column: "amount", Min: f64(0), Max: f64(100)},
		{Kind: KindRowCount, Table: "billing", Min: f64(1000), Max: f64(2000)},
		{Kind: KindVolumeChange, Table: "billing", MaxDropPct: f64(10), MaxGrowthPct: f64(20)},
		{Kind: KindSchema, Table: "billing", AllowExtra: true, Schema: []ColumnType{
			{Name: "id", Type: "int8"}, {Name: "amount", Type: "double"}, {Name: "status", Type: "text"}}},
		{Kind: KindSchemaDrift, Table: "billing"},
		{Kind: KindFreshness, Table: "billing", Column: "updated_at", MaxAge: "1h"},
		{Name: "no negative amounts", Kind: KindSQL, Table: "billing", SQL: "SELECT * FROM billing WHERE amount < 0;"},
		{Name: "known customers", Kind: KindCrossTable, SQL: `SELECT b.id FROM billing b
			LEFT JOIN customers c USING (customer_id) WHERE c.customer_id IS NULL -- orphans`},
	}
}

func TestRunStandardSuitePasses(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/billing/part-2.parquet", billingRows(1001, 100))
	rep := audit(t, newEngine(t, src, t.TempDir()), "b1", standard()...)
	if !rep.Passed {
		t.Errorf("report failed: %+v", rep.Failed())
	}
	want := map[string]string{
		"not_null(billing.id,status)":     "0 rows with a null in id, status of 1100",
		"unique(billing.id)":              "0 duplicate rows of 1100",
		"accepted_values(billing.status)": "0 rows with other values of 1100",
		"range(billing.amount)":           "0 rows out of range of 1100 (min 0, max 99)",
		"row_count(billing)":              "1100 rows",
		"volume_change(billing)":          "1100 rows vs 1000 on main (+10.0%)",
		"schema(billing)":                 "3 columns as expected (5 in table)",
		"schema_drift(billing)":           "5 columns unchanged",
		"freshness(billing.updated_at)":   "newest 2025-06-01T11:59:00Z, 1m0s before batch time",
		"no negative amounts":             "0 rows returned",
		"known customers":                 "0 rows returned",
	}
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusPass {
			t.Errorf("%s: status %s (%s %s)", c.Name, c.Status, c.Observed, c.Message)
		}
		if w, ok := want[c.Name]; ok && c.Observed != w {
			t.Errorf("%s: observed %q, want %q", c.Name, c.Observed, w)
		}
		if len(c.SampleRows) != 0 {
			t.Errorf("%s: passing check has samples %v", c.Name, c.SampleRows)
		}
	}
	if len(rep.Checks) != len(standard()) {
		t.Errorf("%d results for %d checks", len(rep.Checks), len(standard()))
	}
}

func TestRunCheckFailures(t *testing.T) {
	tests := []struct {
		name     string
		prepare  func(t *testing.T, src *dirSource) // changes branch b1
		check    Check
		observed string
		sample   string // a substring of the first sample row
		// rows and failures are the result's numbers; nil: not counted.
		rows, failures *int64
	}{
		{
			name: "null ids injected",
			prepare: func(t *testing.T, src *dirSource) {
				// Glob characters in an object name must not reach DuckDB.
				src.write(t, "b1", "gold/billing/part-2*?[x].parquet",
					"SELECT CASE WHEN id <= 1003 THEN NULL ELSE id END AS id, * EXCLUDE (id) FROM ("+billingRows(1001, 10)+")")
			},
			check:    Check{Kind: KindNotNull, Table: "billing", Column: "id"},
			observed: "3 null rows of 1010",
			rows:     i64(1010), failures: i64(3),
			sample: `"id":null`,
		},
		{
			name: "duplicate ids",
			prepare: func(t *testing.T, src *dirSource) {
				src.write(t, "b1", "gold/billing/part-2.parquet", billingRows(998, 5)) // 998..1000 again
			},
			check:    Check{Kind: KindUnique, Table: "billing", Column: "id"},
			observed: "3 duplicate rows of 1005",
			rows:     i64(1005), failures: i64(3),
			sample: `"duplicate_count":2`,
		},
		{
			name: "status not accepted",
			prepare: func(t *testing.T, src *dirSource) {
				src.write(t, "b1", "gold/billing/part-2.parquet",
					"SELECT * REPLACE ('void' AS status) FROM ("+billingRows(1001, 4)+")")
			},
			check:    Check{Kind: KindAcceptedValues, Table: "billing", Column: "status", Values: []string{"open", "paid"}},
			observed: "4 rows with other values of 1004",
			rows:     i64(1004), failures: i64(4),
			sample: `"status":"void"`,
		},
		{
			name: "negative amount",
			prepare: func(t *testing.T, src *dirSource) {
				src.write(t, "b1", "gold/billing/part-2.parquet",
					"SELECT * REPLACE (-5.5::DOUBLE AS amount) FROM ("+billingRows(1001, 2)+")")
			},
			check:    Check{Kind: KindRange, Table: "billing", Column: "amount", Min: f64(0)},
			observed: "2 rows out of range of 1002 (min -5.5, max 99)",
			rows:     i64(1002), failures: i64(2),
			sample: `"amount":-5.5`,
		},
		{
			name:     "too few rows",
			check:    Check{Kind: KindRowCount, Table: "billing", Min: f64(5000)},
			observed: "1000 rows",
			rows:     i64(1000),
		},
		{
			name: "90% fewer rows than base",
			prepare: func(t *testing.T, src *dirSource) {
				src.remove(t, "b1", "gold/billing/part-1.parquet")
				src.write(t, "b1", "gold/billing/part-0.parquet", billingRows(1, 100))
			},
			check:    Check{Kind: KindVolumeChange, Table: "billing", MaxDropPct: f64(50)},
			observed: "100 rows vs 1000 on main (-90.0%)",
			rows:     i64(100),
		},
		{
			name: "column type changed",
			prepare: func(t *testing.T, src *dirSource) {
				src.write(t, "b1", "gold/billing/part-1.parquet",
					"SELECT * REPLACE (amount::VARCHAR AS amount) FROM ("+billingRows(501, 500)+")")
			},
			check: Check{Kind: KindSchema, Table: "billing", Schema: []ColumnType{
				{Name: "id", Type: "BIGINT"}, {Name: "amount", Type: "DOUBLE"}, {Name: "status", Type: "VARCHAR"},
				{Name: "customer_id", Type: "INT"}}},
			// union_by_name widens DOUBLE and VARCHAR to VARCHAR.
			observed: "amount is VARCHAR, not DOUBLE; unexpected updated_at TIMESTAMP",
		},
		{
			name: "drift: type changed and column added",
			prepare: func(t *testing.T, src *dirSource) {
				src.remove(t, "b1", "gold/billing/part-0.parquet")
				src.write(t, "b1", "gold/billing/part-1.parquet",
					"SELECT * REPLACE (customer_id::VARCHAR AS customer_id), 1 AS extra FROM ("+billingRows(501, 500)+")")
			},
			check:    Check{Kind: KindSchemaDrift, Table: "billing"},
			observed: "customer_id changed from INTEGER to VARCHAR; added extra INTEGER",
		},
		{
			name:     "stale data",
			check:    Check{Kind: KindFreshness, Table: "billing", Column: "updated_at", MaxAge: "30s"},
			observed: "newest 2025-06-01T11:59:00Z, 1m0s before batch time",
			rows:     i64(1000),
		},
		{
			name:     "custom sql returns rows",
			check:    Check{Kind: KindSQL, Table: "billing", SQL: "SELECT id, amount FROM billing WHERE amount > 98 AND id < 100"},
			observed: "1 rows returned",
			failures: i64(1),
			sample:   `{"id":99,"amount":99.0}`,
		},
		{
			name: "cross table orphans",
			prepare: func(t *testing.T, src *dirSource) {
				src.write(t, "b1", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id FROM range(0, 49) r(i)")
			},
			check:    Check{Kind: KindCrossTable, SQL: "SELECT b.id FROM billing b ANTI JOIN customers c USING (customer_id) WHERE id < 100"},
			observed: "2 rows returned",
			failures: i64(2),
			sample:   `{"id":49}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fixture(t)
			if tt.prepare != nil {
				tt.prepare(t, src)
			}
			rep := audit(t, newEngine(t, src, ""), "b1", tt.check)
			res := only(t, rep)
			if res.Status != schemas.StatusFail || rep.Passed {
				t.Errorf("status %s, passed %v, want fail (%s)", res.Status, rep.Passed, res.Message)
			}
			if res.Observed != tt.observed {
				t.Errorf("observed %q, want %q", res.Observed, tt.observed)
			}
			if tt.sample != "" && !strings.Contains(strings.Join(res.SampleRows, "\n"), tt.sample) {
				t.Errorf("samples %q, want one containing %s", res.SampleRows, tt.sample)
			}
			if len(res.SampleRows) > 3 {
				t.Errorf("%d samples, want at most SampleRows=3", len(res.SampleRows))
			}
			if res.Threshold == "" {
				t.Error("no threshold in result")
			}
			if !sameCount(res.RowsChecked, tt.rows) || !sameCount(res.Failures, tt.failures) {
				t.Errorf("rows_checked %s, failures %s; want %s, %s", count(res.RowsChecked), count(res.Failures), count(tt.rows), count(tt.failures))
			}
		})
	}
}

func i64(n int64) *int64 { return &n }

func sameCount(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func count(n *int64) string {
	if n == nil {
		return "nil"
	}
	return fmt.Sprint(*n)
}

func TestRunWarnSeverityDoesNotFail(t *testing.T) {
	src := fixture(t)
	rep := audit(t, newEngine(t, src, ""), "b1",
		Check{Kind: KindRowCount, Table: "billing", Min: f64(5000), Severity: SeverityWarn},
		Check{Kind: KindNotNull, Table: "billing", Column: "id"})
	if !rep.Passed {
		t.Errorf("report failed on a warning: %+v", rep.Checks)
	}
	if rep.Checks[0].Status != schemas.StatusWarn || rep.Checks[1].Status != schemas.StatusPass {
		t.Errorf("statuses %s, %s; want warn, pass", rep.Checks[0].Status, rep.Checks[1].Status)
	}
	if p, f, w := rep.Counts(); p != 1 || f != 0 || w != 1 {
		t.Errorf("counts %d/%d/%d", p, f, w)
	}
}

func TestRunBatchScopeReadsOnlyChangedFiles(t *testing.T) {
	src := fixture(t)
	// The batch adds ids 2001..2010 with 2 null statuses; main's rows are clean.
	src.write(t, "b1", "gold/billing/part-2.parquet",
		"SELECT * REPLACE (CASE WHEN id > 2008 THEN NULL ELSE status END AS status) FROM ("+billingRows(2001, 10)+")")
	rep := audit(t, newEngine(t, src, ""), "b1",
		Check{Kind: KindNotNull, Table: "billing", Column: "status", Scope: ScopeBatch},
		Check{Kind: KindRowCount, Table: "billing", Max: f64(10), Scope: ScopeBatch},
		Check{Name: "batch ids only", Kind: KindSQL, Table: "billing", Scope: ScopeBatch, SQL: "SELECT id FROM billing WHERE id < 2001"},
		Check{Name: "main is base", Kind: KindSQL, Table: "billing", Scope: ScopeBatch,
			SQL: "SELECT 1 FROM (SELECT count(*) AS n FROM base.billing) WHERE n <> 1000"},
	)
	want := []struct{ status, observed string }{
		{schemas.StatusFail, "2 null rows of 10"},
		{schemas.StatusPass, "10 rows"},
		{schemas.StatusPass, "0 rows returned"},
		{schemas.StatusPass, "0 rows returned"},
	}
	for i, w := range want {
		if c := rep.Checks[i]; c.Status != w.status || c.Observed != w.observed {
			t.Errorf("%s: %s %q, want %s %q (%s)", c.Name, c.Status, c.Observed, w.status, w.observed, c.Message)
		}
	}
	if n := src.downloaded("b1", "gold/billing/part-0.parquet"); n != 0 {
		t.Errorf("unchanged part-0 downloaded from b1 %d times", n)
	}
	if n := src.downloaded("b1", "gold/billing/part-2.parquet"); n != 1 {
		t.Errorf("changed part-2 downloaded %d times, want 1", n)
	}
}

func TestRunUnknownColumnIsCheckError(t *testing.T) {
	src := fixture(t)
	rep := audit(t, newEngine(t, src, ""), "b1",
		Check{Kind: KindNotNull, Table: "billing", Column: "nope"},
		Check{Kind: KindRange, Table: "billing", Column: "status", Min: f64(0)}, // text vs number
		Check{Kind: KindNotNull, Table: "billing", Column: "id"},
		Check{Kind: KindSQL, Table: "billing", SQL: "SELECT missing_col FROM billing"},
		Check{Kind: KindFreshness, Table: "billing", Column: "status", MaxAge: "1h"},
	)
	if rep.Passed {
		t.Error("report passed with errored checks")
	}
	for i, c := range rep.Checks {
		want := schemas.StatusError
		if i == 2 {
			want = schemas.StatusPass
		}
		if c.Status != want {
			t.Errorf("%s: status %s, want %s (%s)", c.Name, c.Status, want, c.Message)
		}
		if want == schemas.StatusError && c.Message == "" {
			t.Errorf("%s: error without message", c.Name)
		}
	}
	if m := rep.Checks[0].Message; !strings.Contains(m, `no column "nope"`) {
		t.Errorf("message %q does not name the column", m)
	}
}

func TestRunTableWithoutFiles(t *testing.T) {
	src := fixture(t)
	suite := Suite{Tables: append(tables, Table{Name: "refunds", Path: "gold/refunds/"}), Checks: []Check{
		{Kind: KindRowCount, Table: "refunds", Min: f64(1)},
		{Kind: KindNotNull, Table: "refunds", Column: "id"},
		{Kind: KindRange, Table: "refunds", Column: "amount", Max: f64(10)},
		// No file changed in billing on the batch: the batch view is empty
		// but has billing's columns.
		{Kind: KindRowCount, Table: "billing", Scope: ScopeBatch, Min: f64(1)},
		{Kind: KindUnique, Table: "billing", Column: "id", Scope: ScopeBatch},
	}}
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Repository: "r", Ref: "b1", BaseRef: "main", Suite: suite})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ status, observed string }{
		{schemas.StatusFail, "0 rows"},
		{schemas.StatusPass, "0 null rows of 0"},
		{schemas.StatusPass, "0 rows out of range of 0"},
		{schemas.StatusFail, "0 rows"},
		{schemas.StatusPass, "0 duplicate rows of 0"},
	}
	for i, w := range want {
		if c := rep.Checks[i]; c.Status != w.status || c.Observed != w.observed {
			t.Errorf("%s: %s %q, want %s %q (%s)", c.Name, c.Status, c.Observed, w.status, w.observed, c.Message)
		}
	}
}

func TestRunFormats(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "raw/events/a.csv", "SELECT i AS id, 'x' || i AS name FROM range(0, 10) r(i)")
	src.write(t, "main", "raw/events/b.csv", "SELECT i AS id, NULL AS name FROM range(10, 12) r(i)")
	src.write(t, "main", "raw/logs/a.jsonl", "SELECT i AS id, TIMESTAMP '2025-06-01 11:00:00' AS at FROM range(0, 7) r(i)")
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
		Tables: []Table{{Name: "events", Path: "raw/events/", Format: FormatCSV}, {Name: "logs", Path: "raw/logs/", Format: FormatJSONL}},
		Checks: []Check{
			{Kind: KindNotNull, Table: "events", Column: "name"},
			{Kind: KindUnique, Table: "events", Column: "id"},
			{Kind: KindRowCount, Table: "logs", Min: f64(7), Max: f64(7)},
			{Kind: KindFreshness, Table: "logs", Column: "at", MaxAge: "2h"},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2 null rows of 12", "0 duplicate rows of 12", "7 rows", "newest 2025-06-01T11:00:00Z, 1h0m0s before batch time"}
	for i, w := range want {
		if c := rep.Checks[i]; c.Observed != w {
			t.Errorf("%s: %s %q, want %q (%s)", c.Name, c.Status, c.Observed, w, c.Message)
		}
	}
	if rep.Checks[0].Status != schemas.StatusFail || rep.Checks[3].Status != schemas.StatusPass {
		t.Errorf("statuses: %+v", rep.Checks)
	}
}

func TestRunCacheAvoidsSecondDownload(t *testing.T) {
	src := fixture(t)
	// At commits: a file read at a branch is not kept in the cache (review 44).
	main, b1 := cid("main"), cid("b1")
	src.branch(t, "main", main)
	src.branch(t, "b1", b1)
	cache := t.TempDir()
	e := newEngine(t, src, cache)
	checks := []Check{{Kind: KindVolumeChange, Table: "billing", MaxDropPct: f64(1)}}
	audit := func() schemas.AuditReport {
		t.Helper()
		rep, err := e.Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: b1, BaseRef: main, BaseName: "main",
			BatchTime: batchTime, Suite: Suite{Tables: tables, Checks: checks}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	audit()
	first := src.totalDownloads()
	// b1 and main hold the same files: one download each with the cache.
	if first != 2 {
		t.Errorf("first run downloaded %d files, want 2", first)
	}
	rep := audit()
	if n := src.totalDownloads(); n != first {
		t.Errorf("second run downloaded %d more files", n-first)
	}
	if c := only(t, rep); c.Status != schemas.StatusPass || c.Observed != "1000 rows vs 1000 on main (+0.0%)" {
		t.Errorf("cached run: %s %q %s", c.Status, c.Observed, c.Message)
	}
	if left, _ := os.ReadDir(e.filesDir()); len(left) != 0 {
		t.Errorf("run downloads not cleaned: %v", left)
	}
	e.Close()
	if _, err := os.Stat(e.dir); !os.IsNotExist(err) {
		t.Errorf("engine dir left after Close: %v", err)
	}
}

// TestRunRemovesItsDownloads: without a cache a run downloads into the
// engine's files directory, and removes what it downloaded when it ends,
// passing or failing, leaving no directory of its own behind.
func TestRunRemovesItsDownloads(t *testing.T) {
	src := fixture(t)
	e := newEngine(t, src, "")
	checks := []Check{{Kind: KindVolumeChange, Table: "billing", MaxDropPct: f64(1)}}
	audit(t, e, "b1", checks...)
	audit(t, e, "b1", Check{Kind: KindRowCount, Table: "billing", Max: f64(1)})
	if n := src.totalDownloads(); n < 4 {
		t.Fatalf("the two runs downloaded %d files, want at least 4 (no cache)", n)
	}
	if left, err := os.ReadDir(e.filesDir()); err != nil || len(left) != 0 {
		t.Errorf("files directory after the runs: %v, %v; want empty", left, err)
	}
	entries, _ := os.ReadDir(e.dir)
	for _, d := range entries {
		if d.Name() != "files" && d.Name() != "duckdb-tmp" { // DuckDB's spill directory, made when it spills
			t.Errorf("engine directory holds %s, want only files (and DuckDB's)", d.Name())
		}
	}
}

func TestRunCustomSQLIsConfined(t *testing.T) {
	src := fixture(t)
	passwd := "SELECT * FROM read_csv('/etc/passwd')"
	rep := audit(t, newEngine(t, src, ""), "b1",
		Check{Name: "outside file", Kind: KindSQL, Table: "billing", SQL: passwd},
		Check{Name: "second statement", Kind: KindSQL, Table: "billing", SQL: "SELECT 1 WHERE false; SET enable_external_access = true"},
		Check{Name: "after", Kind: KindSQL, Table: "billing", SQL: passwd},
		Check{Name: "replacement scan", Kind: KindSQL, Table: "billing", SQL: "SELECT * FROM '/etc/passwd'"},
		Check{Name: "another catalog", Kind: KindSQL, Table: "billing", SQL: "SELECT * FROM run_0.main.billing"},
		Check{Name: "catalog as schema", Kind: KindSQL, Table: "billing", SQL: "SELECT * FROM memory.billing"},
		Check{Name: "catalog listing", Kind: KindCrossTable, SQL: "SELECT * FROM duckdb_tables()"},
		Check{Name: "sql in a string", Kind: KindCrossTable, SQL: "SELECT * FROM query('SELECT 1')"},
		Check{Name: "where escaping", Kind: KindNotNull, Table: "billing", Column: "id", Where: "true)) AS billing; CREATE VIEW x AS SELECT 1; SELECT * FROM ((SELECT 1"},
	)
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusError || !strings.Contains(c.Message, "not a single read-only query") {
			t.Errorf("%s: status %s %q %s, want an error saying it is not confined", c.Name, c.Status, c.Observed, c.Message)
		}
	}
	// What stays allowed: CTEs, the three schemas, range().
	rep = audit(t, newEngine(t, src, ""), "b1",
		Check{Name: "cte", Kind: KindCrossTable, SQL: "WITH b AS (SELECT id FROM billing) SELECT * FROM b JOIN base.billing m USING (id) WHERE false"},
		Check{Name: "range", Kind: KindSQL, Table: "billing", SQL: "SELECT i FROM range(3) r(i) WHERE i > 5"},
	)
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusPass {
			t.Errorf("%s: %s %q %s", c.Name, c.Status, c.Observed, c.Message)
		}
	}
}

// The payload from issue 12: closed inside the subquery lakewap wraps
// around custom SQL, it becomes three statements, and the driver runs every
// statement of a query string. It replaced the view later checks read with
// main's clean rows, and could COPY into the download cache. Both must be
// refused, and the bad rows still found.
func TestCustomSQLPayloadDoesNotExecute(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/billing/part-3.parquet", "SELECT NULL::BIGINT AS id, 1 AS customer_id, 'open' AS status, 1.0::DOUBLE AS amount, TIMESTAMP '2025-06-01 12:00:00' AS updated_at")
	cache := t.TempDir()
	planted := filepath.Join(cache, "planted.csv")
	rep := audit(t, newEngine(t, src, cache), "b1",
		Check{Name: "payload", Kind: KindSQL, Table: "billing",
			SQL: "SELECT 1 WHERE false) s; CREATE OR REPLACE VIEW billing AS SELECT * FROM base.billing; SELECT * FROM (SELECT 1 WHERE false"},
		Check{Name: "copy", Kind: KindSQL, Table: "billing",
			SQL: "SELECT 1 WHERE false) s; COPY (SELECT 1 AS id) TO '" + planted + "'; SELECT * FROM (SELECT 1 WHERE false"},
		Check{Name: "ids", Kind: KindNotNull, Table: "billing", Column: "id"},
	)
	if rep.Passed {
		t.Errorf("audit passed with a NULL id: %+v", rep.Checks)
	}
	for _, c := range rep.Checks {
		want := schemas.StatusError
		if c.Name == "ids" {
			want = schemas.StatusFail
		}
		if c.Status != want {
			t.Errorf("%s: %s %q %s; want %s", c.Name, c.Status, c.Observed, c.Message, want)
		}
	}
	if _, err := os.Stat(planted); err == nil {
		t.Errorf("custom SQL wrote %s", planted)
	}
}

func TestRunErrors(t *testing.T) {
	src := fixture(t)
	e := newEngine(t, src, "")
	ctx := context.Background()
	suite := Suite{Tables: tables, Checks: []Check{{Kind: KindNotNull, Table: "billing", Column: "id"}}}

	src.failPath = "gold/billing/part-1.parquet"
	if _, err := e.Run(ctx, Request{Repository: "r", Ref: "b1", Suite: suite}); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Errorf("download failure: err = %v", err)
	}
	src.failPath = ""

	bad := Suite{Tables: tables, Checks: []Check{{Kind: "nul", Table: "billing"}}}
	if _, err := e.Run(ctx, Request{Ref: "b1", Suite: bad}); !errors.Is(err, ErrInvalidSuite) {
		t.Errorf("invalid suite: err = %v", err)
	}

	rep, err := e.Run(ctx, Request{Ref: "b1", Suite: Suite{Tables: tables, Checks: []Check{
		{Kind: KindVolumeChange, Table: "billing", MaxDropPct: f64(1)}}}})
	if err != nil || only(t, rep).Status != schemas.StatusError || rep.Passed {
		t.Errorf("no base ref: err %v, report %+v", err, rep)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Run(cancelled, Request{Ref: "b1", Suite: suite}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}

	e.Close()
	if _, err := e.Run(ctx, Request{Ref: "b1", Suite: suite}); !errors.Is(err, ErrClosed) {
		t.Errorf("closed: err = %v", err)
	}
}

// Concurrent runs on one engine each see their own ref's tables.
func TestRunConcurrentRunsAreIsolated(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/billing/part-2.parquet", billingRows(1001, 100))
	e := newEngine(t, src, t.TempDir())
	refs := []string{"main", "b1", "main", "b1"}
	want := map[string]string{"main": "1000 rows", "b1": "1100 rows"}
	reps := make([]schemas.AuditReport, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Go(func() {
			reps[i], errs[i] = e.Run(context.Background(), Request{Repository: "r", Ref: ref, BaseRef: "main",
				Suite: Suite{Tables: tables, Checks: []Check{
					{Kind: KindRowCount, Table: "billing", Min: f64(1)},
					{Name: "count in sql", Kind: KindSQL, Table: "billing",
						SQL: "SELECT n FROM (SELECT count(*) AS n FROM billing) WHERE n <> " + strings.TrimSuffix(want[ref], " rows")},
				}}})
		})
	}
	wg.Wait()
	for i, ref := range refs {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if c := reps[i].Checks; c[0].Observed != want[ref] || c[1].Status != schemas.StatusPass {
			t.Errorf("run %d on %s: %q, sql %s %q %s", i, ref, c[0].Observed, c[1].Status, c[1].Observed, c[1].Message)
		}
	}
}

// A file DuckDB cannot read makes its table's checks errors, not the run.
func TestRunUnreadableFile(t *testing.T) {
	src := fixture(t)
	dst := filepath.Join(src.root, "b1", "gold", "billing", "part-9[1].parquet")
	if err := os.WriteFile(dst, []byte("not parquet at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := audit(t, newEngine(t, src, ""), "b1",
		Check{Kind: KindRowCount, Table: "billing", Min: f64(1)},
		Check{Kind: KindRowCount, Table: "customers", Min: f64(1)})
	if c := rep.Checks[0]; c.Status != schemas.StatusError || !strings.Contains(c.Message, "cannot read table billing") {
		t.Errorf("billing: %s %q", c.Status, c.Message)
	}
	if c := rep.Checks[1]; c.Status != schemas.StatusPass || c.Observed != "50 rows" {
		t.Errorf("customers: %s %q %s", c.Status, c.Observed, c.Message)
	}
}

// A unique check's figures and sample rows are the same whether they come
// from one grouped scan (large views) or from the aggregate scan and a
// sample query (small views): the most duplicated keys first, then by key;
// NULLs ignored for one column, equal to each other in a combination; at
// most SampleRows keys.
func TestUniqueSampleRowsFromTheCountingScan(t *testing.T) {
	for _, grouped := range []bool{true, false} {
		t.Run(fmt.Sprintf("grouped=%v", grouped), func(t *testing.T) { testUniqueSampleRows(t, grouped) })
	}
}

func testUniqueSampleRows(t *testing.T, grouped bool) {
	src := newDirSource(t)
	src.write(t, "main", "gold/billing/part-0.parquet", `SELECT * FROM (VALUES
		(5, 1), (5, 1), (5, 1), (2, 1), (2, 1), (9, 1), (9, 1), (7, 1), (1, 1), (3, 1), (3, 1),
		(NULL, NULL), (NULL, NULL), (NULL, 2)) v(id, customer_id)`)
	e := newEngine(t, src, t.TempDir()) // SampleRows: 3
	e.groupedUniqueBytes = 0
	if !grouped {
		e.groupedUniqueBytes = 1 << 62
	}
	for _, tc := range []struct {
		check    Check
		observed string
		samples  []string
	}{
		{Check{Kind: KindUnique, Table: "billing", Column: "id"}, "5 duplicate rows of 14",
			[]string{`{"id":5,"duplicate_count":3}`, `{"id":2,"duplicate_count":2}`, `{"id":3,"duplicate_count":2}`}},
		{Check{Kind: KindUnique, Table: "billing", Columns: []string{"customer_id", "id"}}, "6 duplicate rows of 14",
			// NULLs sort last, as ORDER BY does.
			[]string{`{"customer_id":1,"id":5,"duplicate_count":3}`, `{"customer_id":1,"id":2,"duplicate_count":2}`, `{"customer_id":1,"id":3,"duplicate_count":2}`}},
		{Check{Kind: KindUnique, Table: "billing", Column: "id", Where: "id <> 5"}, "3 duplicate rows of 8",
			[]string{`{"id":2,"duplicate_count":2}`, `{"id":3,"duplicate_count":2}`, `{"id":9,"duplicate_count":2}`}},
		{Check{Kind: KindUnique, Table: "billing", Column: "id", Where: "id = 7"}, "0 duplicate rows of 1", nil},
	} {
		res := only(t, audit(t, e, "main", tc.check))
		if res.Observed != tc.observed || fmt.Sprint(res.SampleRows) != fmt.Sprint(tc.samples) {
			t.Errorf("%s where %q: observed %q, samples %v; want %q, %v", res.Name, tc.check.Where, res.Observed, res.SampleRows, tc.observed, tc.samples)
		}
	}
}

// TestRunWorkDirFilesDoNotCollide: without a cache, downloads go to the
// run's work dir. A batch-scope view with no changed file takes its columns
// from a file of the table it downloads on its own; that download must not
// land on the name of a file another view reads, or the batch's table is
// audited over the other table's rows. Here the batch adds null billing ids
// and leaves archive (same columns, clean rows) unchanged: before the fix
// billing's batch view read archive's file and the null ids passed.
func TestRunWorkDirFilesDoNotCollide(t *testing.T) {
	src := fixture(t)
	src.write(t, "main", "gold/archive/a.parquet", billingRows(1, 20))
	src.branch(t, "main", "b2")
	src.write(t, "b2", "gold/billing/part-2.parquet",
		"SELECT * REPLACE (CASE WHEN id > 2005 THEN NULL ELSE id END AS id) FROM ("+billingRows(2001, 10)+")")
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "billing", Repository: "repo", Ref: "b2", BaseRef: "main",
		BatchTime: batchTime, Suite: Suite{Tables: append(slices.Clone(tables), Table{Name: "archive", Path: "gold/archive/"}), Checks: []Check{
			{Kind: KindNotNull, Table: "billing", Column: "id", Scope: ScopeBatch},
			{Kind: KindRowCount, Table: "archive", Max: f64(0), Scope: ScopeBatch},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; c.Status != schemas.StatusFail || c.Observed != "5 null rows of 10" {
		t.Errorf("billing not_null over the batch: %s %q, want fail \"5 null rows of 10\" (%s)", c.Status, c.Observed, c.Message)
	}
	if c := rep.Checks[1]; c.Status != schemas.StatusPass || c.Observed != "0 rows" {
		t.Errorf("archive row_count over the batch: %s %q, want pass \"0 rows\" (%s)", c.Status, c.Observed, c.Message)
	}
	if rep.Passed {
		t.Error("the batch with null billing ids passed its audit")
	}
}

// writeRaw writes text, as it is, to path on ref.
func (s *dirSource) writeRaw(t testing.TB, ref, path, text string) {
	t.Helper()
	dst := filepath.Join(s.root, ref, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// auditTableAt audits ref b1 against main with one table t, under path
// and in format, and check c (named "c", of table t).
func auditTableAt(t testing.TB, e *Engine, path, format string, c Check) schemas.AuditReport {
	t.Helper()
	c.Name, c.Table = "c", "t"
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: path, Format: format}}, Checks: []Check{c}}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
