package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// pyarrowCase is one table a writer controls the bytes of: files under
// the table (path -> the query that writes it; .csv and .jsonl by their
// extension, else Parquet) and the columns its checks read.
type pyarrowCase struct {
	name, format string
	files        map[string]string
	raw          map[string]string // files written as these bytes
	columns      []string
}

// pyarrowCases are hostile Parquet, CSV and JSON tables: case-differing
// columns, extra and hidden files, nested and mixed types, NULL spellings,
// hive partition directories (__HIVE_DEFAULT_PARTITION__ included).
var pyarrowCases = []pyarrowCase{
	{name: "plain", format: FormatParquet, columns: []string{"id", "name"}, files: map[string]string{
		"a.parquet": "SELECT i::BIGINT AS id, 'n' || i AS name FROM range(0, 10) r(i)",
		"b.parquet": "SELECT CASE WHEN i % 3 = 0 THEN NULL ELSE i END::BIGINT AS id, NULL::VARCHAR AS name FROM range(10, 20) r(i)"}},
	{name: "case_differing", format: FormatParquet, columns: []string{"billing_id"}, files: map[string]string{
		"a.parquet": "SELECT i::BIGINT AS billing_id FROM range(0, 5) r(i)",
		"b.parquet": "SELECT i::BIGINT AS BILLING_ID FROM range(5, 10) r(i)"}},
	{name: "missing_column", format: FormatParquet, columns: []string{"id", "extra"}, files: map[string]string{
		"a.parquet": "SELECT i::BIGINT AS id, 'x' AS extra FROM range(0, 5) r(i)",
		"b.parquet": "SELECT i::BIGINT AS id FROM range(5, 10) r(i)"}},
	{name: "column_only_in_a_later_file", format: FormatParquet, columns: []string{"id", "extra"}, files: map[string]string{
		"a.parquet": "SELECT i::BIGINT AS id FROM range(0, 5) r(i)",
		"b.parquet": "SELECT i::BIGINT AS id, NULL::VARCHAR AS extra FROM range(5, 10) r(i)"}},
	{name: "hidden_and_marker_files", format: FormatParquet, columns: []string{"id"}, files: map[string]string{
		"a.parquet":         "SELECT i::BIGINT AS id FROM range(0, 5) r(i)",
		"_hidden.parquet":   "SELECT NULL::BIGINT AS id",
		".dot.parquet":      "SELECT NULL::BIGINT AS id",
		"_tmp/part.parquet": "SELECT NULL::BIGINT AS id"}},
	{name: "nested", format: FormatParquet, columns: []string{"s", "l"}, files: map[string]string{
		"a.parquet": "SELECT CASE WHEN i % 2 = 0 THEN NULL ELSE {'x': i, 'y': NULL::VARCHAR} END AS s, CASE WHEN i % 3 = 0 THEN NULL ELSE [i, NULL] END AS l FROM range(0, 6) r(i)"}},
	{name: "mixed_types", format: FormatParquet, columns: []string{"id"}, files: map[string]string{
		"a.parquet": "SELECT i::BIGINT AS id FROM range(0, 5) r(i)",
		"b.parquet": "SELECT CASE WHEN i = 7 THEN 'seven' ELSE i::VARCHAR END AS id FROM range(5, 10) r(i)"}},
	{name: "mixed_int_widths", format: FormatParquet, columns: []string{"id"}, files: map[string]string{
		"a.parquet": "SELECT i::INTEGER AS id FROM range(0, 5) r(i)",
		"b.parquet": "SELECT CASE WHEN i = 7 THEN NULL ELSE i END::BIGINT AS id FROM range(5, 10) r(i)"}},
	{name: "hive_partitions", format: FormatParquet, columns: []string{"id", "region"}, files: map[string]string{
		"region=eu/a.parquet":                         "SELECT i::BIGINT AS id FROM range(0, 5) r(i)",
		"region=__HIVE_DEFAULT_PARTITION__/b.parquet": "SELECT i::BIGINT AS id FROM range(5, 10) r(i)"}},
	{name: "hive_partition_shadows_a_column", format: FormatParquet, columns: []string{"id", "region"}, files: map[string]string{
		"region=__HIVE_DEFAULT_PARTITION__/a.parquet": "SELECT i::BIGINT AS id, 'us' AS region FROM range(0, 5) r(i)"}},
	{name: "hive_partition_disagrees_with_a_column", format: FormatParquet, columns: []string{"id", "region"}, files: map[string]string{
		"region=eu/a.parquet": "SELECT i::BIGINT AS id, CASE WHEN i = 0 THEN NULL ELSE 'us' END AS region FROM range(0, 5) r(i)"}},
	{name: "hive_partition_key_escaped", format: FormatParquet, columns: []string{"id", "region"}, files: map[string]string{
		"reg%69on=eu/a.parquet": "SELECT i::BIGINT AS id, CASE WHEN i = 0 THEN NULL ELSE 'us' END AS region FROM range(0, 5) r(i)"}},
	{name: "csv_plain", format: FormatCSV, columns: []string{"id", "name"}, files: map[string]string{
		"a.csv": "SELECT i::BIGINT AS id, 'n' || i AS name FROM range(0, 5) r(i)",
		"b.csv": "SELECT CASE WHEN i = 6 THEN NULL ELSE i END::BIGINT AS id, 'm' AS name FROM range(5, 10) r(i)"}},
	{name: "csv_null_spellings", format: FormatCSV, columns: []string{"id", "name"}, raw: map[string]string{
		"a.csv": "id,name\n1,a\n2,NULL\nNULL,c\nNA,d\n,\nnull,N/A\n"}},
	{name: "csv_dialect", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1,a\n#2,b\n3,c\n"}},
	{name: "csv_case_differing", format: FormatCSV, columns: []string{"billing_id"}, raw: map[string]string{
		"a.csv": "billing_id\n1\n2\n", "b.csv": "BILLING_ID\n3\n4\n"}},
	{name: "csv_hive_partitions", format: FormatCSV, columns: []string{"id", "region"}, raw: map[string]string{
		"region=eu/a.csv": "id\n1\n2\n", "region=__HIVE_DEFAULT_PARTITION__/b.csv": "id\n3\n"}},
	{name: "json_plain", format: FormatJSONL, columns: []string{"id", "name"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1, \"name\": \"a\"}\n{\"id\": null, \"name\": \"b\"}\n{\"id\": 3}\n"}},
	{name: "json_mixed_types", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1}\n{\"id\": \"two\"}\n{\"id\": null}\n"}},
	{name: "json_nested", format: FormatJSONL, columns: []string{"s"}, raw: map[string]string{
		"a.jsonl": "{\"s\": {\"x\": 1}}\n{\"s\": null}\n{\"s\": {\"x\": null}}\n"}},
	{name: "json_case_differing", format: FormatJSONL, columns: []string{"billing_id"}, raw: map[string]string{
		"a.jsonl": "{\"billing_id\": 1}\n", "b.jsonl": "{\"BILLING_ID\": 2}\n"}},
}

// pyarrowAnswer is what pyarrow_read.py printed for one table.
type pyarrowAnswer struct {
	Rows    int64             `json:"rows"`
	Nulls   map[string]*int64 `json:"nulls"`
	Columns []string          `json:"columns"`
	Error   string            `json:"error"`
}

// TestTextAndParquetDifferentialAgainstPyArrow audits hostile Parquet, CSV
// and JSON tables and reads them with pyarrow.dataset (hive partitioning,
// as pandas does): where lakewap's audit passes a table, its row count and
// the null counts of the checked columns must be pyarrow's; elsewhere
// lakewap must refuse (a check errors or fails). A table pyarrow cannot
// read is counted: its readers fail rather than read other rows.
func TestTextAndParquetDifferentialAgainstPyArrow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pyarrow in Python; skipped with -short")
	}
	python, err := testPython()
	if err != nil {
		t.Skipf("differential test skipped: %v; scripts/pyenv.sh installs pyarrow (./test.sh runs it)", err)
	}
	src := newBatchSource(t)
	var args []string
	for _, c := range pyarrowCases {
		for p, q := range c.files {
			src.write(t, "b1", c.name+"/"+p, q)
		}
		for p, b := range c.raw {
			dst := filepath.Join(src.root, "b1", c.name, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		format := map[string]string{FormatParquet: "parquet", FormatCSV: "csv", FormatJSONL: "json"}[c.format]
		args = append(args, format+":"+strings.Join(c.columns, ",")+":"+filepath.Join(src.root, "b1", c.name))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	answers := scriptAnswers[pyarrowAnswer](t, ctx, python, "pyarrow_read.py", args)
	for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
		e := newEngine(t, src, cache)
		var agreed, refused, unreadable int
		for i, c := range pyarrowCases {
			checks := []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: new(float64)}}
			for _, col := range c.columns {
				checks = append(checks, Check{Name: "nulls_" + col, Kind: KindNotNull, Table: "t", Column: col, Mostly: new(float64)})
			}
			rep, err := e.Run(ctx, Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: c.name + "/", Format: c.format}}, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			pa := answers[i]
			if !rep.Passed {
				refused++
				t.Logf("cache %v, %s: lakewap refuses (%s); pyarrow reads %+v", cache != "", c.name, refusal(rep), pa)
				continue
			}
			if pa.Error != "" {
				unreadable++
				t.Logf("cache %v, %s: pyarrow cannot read it (%s); lakewap reads %s", cache != "", c.name, pa.Error, observed(rep))
				continue
			}
			ours := observed(rep)
			if absent := slices.DeleteFunc(slices.Clone(c.columns), func(col string) bool { return pa.Nulls[col] != nil }); len(absent) > 0 {
				// pyarrow takes the first file's schema: a column only later
				// files have is not in its table at all. Its readers cannot
				// select it (an error, not other values); counted, and shown.
				unreadable++
				t.Logf("cache %v, %s: pyarrow's table has no column %v (columns %v); lakewap reads %s", cache != "", c.name, absent, pa.Columns, ours)
				continue
			}
			theirs := fmt.Sprintf("%d rows", pa.Rows)
			for _, col := range c.columns {
				theirs += fmt.Sprintf(", %s %d nulls", col, *pa.Nulls[col])
			}
			if ours != theirs {
				t.Errorf("cache %v, %s: lakewap passes reading %q, pyarrow reads %q (columns %v): the two differ and lakewap does not refuse",
					cache != "", c.name, ours, theirs, pa.Columns)
				continue
			}
			agreed++
		}
		t.Logf("cache %v: %d tables: %d read alike, %d refused by lakewap, %d unreadable by pyarrow (or without a checked column)", cache != "", len(pyarrowCases), agreed, refused, unreadable)
		if agreed < 4 {
			t.Errorf("only %d tables compared", agreed)
		}
	}
}

// observed is a passing report's reading: rows, then each column's nulls.
func observed(rep schemas.AuditReport) string {
	var parts []string
	for _, c := range rep.Checks {
		switch c.Kind {
		case KindRowCount:
			parts = append(parts, c.Observed)
		case KindNotNull:
			var n, of int64
			if _, err := fmt.Sscanf(c.Observed, "%d null rows of %d", &n, &of); err != nil {
				parts = append(parts, c.Table+" "+c.Observed)
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %d nulls", strings.TrimPrefix(c.Name, "nulls_"), n))
		}
	}
	return strings.Join(parts, ", ")
}

// refusal names the checks that stopped the table.
func refusal(rep schemas.AuditReport) string {
	var out []string
	for _, c := range rep.Failed() {
		out = append(out, c.Name+": "+schemas.Clip(cmpOr(c.Message, c.Observed), 160))
	}
	return strings.Join(out, "; ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// scriptAnswers runs the script testdata/name with python over args and
// decodes its answers, one JSON line for each of args.
func scriptAnswers[A any](t *testing.T, ctx context.Context, python, name string, args []string) []A {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, append([]string{script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	var answers []A
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20) // an answer may hold a table's rows
	for sc.Scan() {
		var a A
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatal(err)
		}
		answers = append(answers, a)
	}
	if len(answers) != len(args) {
		t.Fatalf("%d answers for %d tables", len(answers), len(args))
	}
	return answers
}
