package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// differentialData writes the clean and the dirty data sets: billing (1000
// rows) and customers (50). The dirty billing has 5 NULL ids, ids 31..33
// twice (31 and 32 with the same customer too), 4 'void' statuses, 5 NULL
// statuses, 2 negative amounts, 3 malformed codes and 2 unknown customers.
func differentialData(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	must(t, err)
	defer db.Close()
	clean := `SELECT i::BIGINT AS id, (i % 50)::INTEGER AS customer_id,
		CASE WHEN i % 2 = 0 THEN 'open' ELSE 'paid' END AS status, (i % 100)::DOUBLE AS amount,
		'C' || lpad(i::VARCHAR, 5, '0') AS code FROM range(1, 1001) r(i)`
	dirty := `SELECT
		CASE WHEN id <= 5 THEN NULL WHEN id IN (21, 22) THEN id + 10 WHEN id = 23 THEN 33 ELSE id END AS id,
		CASE WHEN id IN (21, 22) THEN customer_id + 10 WHEN id IN (70, 71) THEN 999 ELSE customer_id END AS customer_id,
		CASE WHEN id BETWEEN 40 AND 43 THEN 'void' WHEN id BETWEEN 80 AND 84 THEN NULL ELSE status END AS status,
		CASE WHEN id IN (50, 51) THEN -1 ELSE amount END AS amount,
		CASE WHEN id BETWEEN 60 AND 62 THEN 'bad' ELSE code END AS code
		FROM (` + clean + `)`
	customers := `SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 50) r(i)`
	for set, billing := range map[string]string{"clean": clean, "dirty": dirty} {
		for table, q := range map[string]string{"billing": billing, "customers": customers} {
			d := filepath.Join(dir, set, table)
			must(t, os.MkdirAll(d, 0o755))
			_, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", q, filepath.Join(d, "part-0.parquet")))
			must(t, err)
		}
	}
}

type differentialOutput struct {
	GE map[string]map[string]struct {
		Success         bool   `json:"success"`
		UnexpectedCount *int64 `json:"unexpected_count"`
		ObservedValue   any    `json:"observed_value"`
		Exception       bool   `json:"exception"`
	} `json:"ge"`
	DBT map[string]map[string]struct {
		Status   string `json:"status"`
		Failures *int64 `json:"failures"`
	} `json:"dbt"`
	Versions map[string]string `json:"versions"`
}

var leadingInt = regexp.MustCompile(`^(-?\d+)`)

func observedCount(c schemas.CheckResult) (int64, bool) {
	m := leadingInt.FindString(c.Observed)
	if m == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(m, 10, 64)
	return n, err == nil
}

// TestDifferentialGreatExpectationsAndDBT runs one Great Expectations suite
// and one dbt schema.yml three ways over the same files: translated by
// lakewap (checks_from) and run by its audit engine, by Great Expectations
// itself (pandas engine), and by `dbt test` (dbt-duckdb). On clean data all
// pass; on dirty data the same checks fail, with the same failing counts
// where the definitions agree. Where they do not (and README says so):
// GE's unique counts every row of a repeated value where lakewap counts the
// extra copies (pairs only here, so GE's count is twice lakewap's), and
// dbt's accepted_values counts distinct unexpected values, lakewap rows.
func TestDifferentialGreatExpectationsAndDBT(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test runs Great Expectations and dbt; skipped with -short")
	}
	python, err := interopPython()
	if err != nil {
		t.Skipf("differential test skipped: %v; scripts/pyenv.sh installs Great Expectations and dbt (./test.sh runs it)", err)
	}
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	differentialData(t, data)
	testdata, err := filepath.Abs(filepath.Join("testdata", "differential"))
	must(t, err)

	cfg, err := config.ParseIn([]byte(`
kafka: {brokers: ["127.0.0.1:9092"]}
lakefs: {endpoint: "http://127.0.0.1:8000", access_key_id: a, secret_access_key: b}
datasets:
  billing:
    repository: lake
    tables:
      - {name: billing, path: billing/}
      - {name: customers, path: customers/}
    checks_from:
      - {great_expectations: suite.json, table: billing}
      - {dbt: schema.yml}
`), func(string) (string, bool) { return "", false }, testdata)
	must(t, err)
	suite := cfg.Datasets["billing"].Suite
	if len(suite.Checks) != 13+8 || len(suite.Skipped) != 0 {
		t.Fatalf("translated %d checks (%d skipped), want the suite's 13 expectations and the schema's 8 tests", len(suite.Checks), len(suite.Skipped))
	}
	engine, err := audit.New(audit.Options{Source: audit.DirSource{Root: data}, WorkDir: tmp, Threads: 2, MemoryLimit: "1GB"})
	must(t, err)
	defer engine.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	lakewap := map[string]map[string]schemas.CheckResult{}
	for _, set := range []string{"clean", "dirty"} {
		rep, err := engine.Run(ctx, audit.Request{Dataset: "billing", Suite: suite, Repository: "local", Ref: set, BaseRef: set})
		must(t, err)
		lakewap[set] = map[string]schemas.CheckResult{}
		for _, c := range rep.Checks {
			lakewap[set][c.Name] = c
		}
	}

	script, err := filepath.Abs(filepath.Join(repoDir, "tests", "interop", "differential.py"))
	must(t, err)
	cmd := exec.CommandContext(ctx, python, script, "--suite", filepath.Join(testdata, "suite.json"),
		"--schema", filepath.Join(testdata, "schema.yml"), "--work", tmp, "--out", filepath.Join(tmp, "tools.json"),
		"clean="+filepath.Join(data, "clean"), "dirty="+filepath.Join(data, "dirty"))
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "HOME="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("differential.py: %v\nstderr:\n%s", err, tail(stderr.String(), 40))
	}
	var out differentialOutput
	b, err := os.ReadFile(filepath.Join(tmp, "tools.json"))
	must(t, err)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("differential.py output: %v\n%s", err, b)
	}
	t.Logf("Great Expectations %s and dbt %s ran in %s", out.Versions["great_expectations"], out.Versions["dbt"], time.Since(started).Round(time.Second))

	failed := map[string][]string{}
	for _, set := range []string{"clean", "dirty"} {
		if len(out.GE[set]) != 13 || len(out.DBT[set]) != 8 {
			t.Fatalf("%s: GE reported %d expectations, dbt %d tests; want 13 and 8", set, len(out.GE[set]), len(out.DBT[set]))
		}
		for name, ge := range out.GE[set] {
			lw, ok := lakewap[set][name]
			switch {
			case !ok:
				t.Errorf("%s: GE ran %s, lakewap has no such check", set, name)
				continue
			case ge.Exception:
				t.Errorf("%s: GE raised on %s", set, name)
			case ge.Success != (lw.Status == schemas.StatusPass):
				t.Errorf("%s: %s: GE success=%v, lakewap %s (%s)", set, name, ge.Success, lw.Status, lw.Observed)
			}
			if !ge.Success {
				failed[set] = append(failed[set], name)
			}
			n, hasCount := observedCount(lw)
			switch {
			case ge.UnexpectedCount != nil && strings.Contains(name, "unique"):
				// GE: every row of a repeated value; lakewap: the extra copies.
				if !hasCount || *ge.UnexpectedCount != 2*n {
					t.Errorf("%s: %s: GE counts %d rows, lakewap %q; with pairs only GE's count is twice lakewap's", set, name, *ge.UnexpectedCount, lw.Observed)
				}
			case ge.UnexpectedCount != nil:
				if !hasCount || *ge.UnexpectedCount != n {
					t.Errorf("%s: %s: GE counts %d unexpected rows, lakewap %q", set, name, *ge.UnexpectedCount, lw.Observed)
				}
			case lw.Kind == audit.KindRowCount || lw.Kind == audit.KindStat:
				if want := fmt.Sprint(ge.ObservedValue); !strings.Contains(lw.Observed, want+" ") && lw.Observed != want+" rows" {
					t.Errorf("%s: %s: GE observed %v, lakewap %q", set, name, ge.ObservedValue, lw.Observed)
				}
			}
		}
		for name, dbt := range out.DBT[set] {
			lw, ok := lakewap[set][name]
			if !ok {
				t.Errorf("%s: dbt ran %s, lakewap has no such check", set, name)
				continue
			}
			if dbt.Status != lw.Status {
				t.Errorf("%s: %s: dbt %s, lakewap %s (%s)", set, name, dbt.Status, lw.Status, lw.Observed)
			}
			if dbt.Status != "pass" {
				failed[set] = append(failed[set], name)
			}
			n, _ := observedCount(lw)
			switch {
			case dbt.Failures == nil:
				t.Errorf("%s: %s: dbt reported no failure count", set, name)
			case lw.Kind == audit.KindAcceptedValues:
				// dbt counts distinct unexpected values, lakewap rows.
				if *dbt.Failures > n {
					t.Errorf("%s: %s: dbt %d distinct values fail, lakewap %q rows", set, name, *dbt.Failures, lw.Observed)
				}
			case *dbt.Failures != n:
				t.Errorf("%s: %s: dbt %d failures, lakewap %q", set, name, *dbt.Failures, lw.Observed)
			}
		}
	}
	// The dirty data must trip what it was made to trip, or the test proves nothing.
	if len(failed["clean"]) != 0 {
		t.Errorf("clean data failed %v", failed["clean"])
	}
	if got := strings.Join(sortedStrings(failed["dirty"]), " "); got != strings.Join(sortedStrings([]string{
		"expect_column_values_to_not_be_null(id)", "expect_column_values_to_be_unique(id)", "expect_column_values_to_be_in_set(status)",
		"expect_column_values_to_be_between(amount)", "expect_column_min_to_be_between(amount)", "expect_column_values_to_match_regex(code)",
		"expect_compound_columns_to_be_unique(customer_id,id)",
		"not_null_billing_id", "unique_billing_id", "accepted_values_billing_status__open__paid", "not_null_billing_status",
		"relationships_billing_customer_id__customer_id__ref_customers_",
	}), " ") {
		t.Errorf("dirty data failed %s", got)
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
