package audit

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// reader63Plain counts, with the venv's DuckDB, the rows of the Parquet
// files of dir for which cond holds, read as the audit reads them
// (union_by_name) and as a plain reader does (read_parquet's default, the
// first file's types; pandas.read_parquet reads those types too): its
// answer is "union plain".
const reader63Plain = `import sys, duckdb
d, cond = sys.argv[1], sys.argv[2]
c = duckdb.connect()
u = c.sql("SELECT count(*) FROM read_parquet('%s/*.parquet', union_by_name=true) WHERE %s" % (d, cond)).fetchall()[0][0]
p = c.sql("SELECT count(*) FROM read_parquet('%s/*.parquet') WHERE %s" % (d, cond)).fetchall()[0][0]
print(u, p)
`

// TestReader63NumbersRenderedOtherwiseUnderCastsAreRefused: a column of
// integers in one file and whole DOUBLEs in another is rendered 3.0 by
// the audit (union_by_name, the union's DOUBLE) and 3 by pandas 3.1.1 and
// DuckDB's plain read_parquet (the first file's BIGINT). Review 62's
// unionRendered judged it only under an accepted_values or a regex of the
// column: a custom sql or a where condition that casts it to text
// (CAST(x AS VARCHAR), x::VARCHAR, format, concat), and a struct's field
// passed where the plain reading fails. Refused now, naming the column
// and both files; a where or sql that compares the numbers as numbers,
// and a text column cast to text, pass. A struct's field or a list's
// element under an accepted_values or regex (the struct rendered
// {'a': 3.0} against {'a': 3}) was refused before, as pandas renders
// nested values' text otherwise whatever their types.
func TestReader63NumbersRenderedOtherwiseUnderCastsAreRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		check   Check
		plain   string // the failing rows' condition, for the plain reading ("" none)
		refused bool
	}{
		{"sql_cast_regex", Check{Kind: KindSQL, SQL: `SELECT * FROM t WHERE NOT regexp_matches(CAST(x AS VARCHAR), '^\d+\.\d$')`},
			`NOT regexp_matches(CAST(x AS VARCHAR), '^\d+\.\d$')`, true},
		{"sql_cast_in_subquery_alias", Check{Kind: KindSQL, SQL: `SELECT * FROM (SELECT CAST(x AS VARCHAR) AS s FROM t) q WHERE s NOT LIKE '%.0'`},
			`CAST(x AS VARCHAR) NOT LIKE '%.0'`, true},
		{"sql_renamed_then_cast", Check{Kind: KindSQL, SQL: `SELECT * FROM (SELECT x AS n FROM t) q WHERE n::VARCHAR NOT LIKE '%.0'`},
			`x::VARCHAR NOT LIKE '%.0'`, true},
		{"where_double_colon", Check{Kind: KindNotNull, Column: "y", Where: `x::VARCHAR = '3'`}, `x::VARCHAR = '3' AND y IS NULL`, true},
		{"where_format", Check{Kind: KindNotNull, Column: "y", Where: `format('{}', x) = '3'`}, `format('{}', x) = '3' AND y IS NULL`, true},
		{"where_concat", Check{Kind: KindNotNull, Column: "y", Where: `concat(x, '') = '3'`}, `concat(x, '') = '3' AND y IS NULL`, true},
		{"where_set_operation", Check{Kind: KindNotNull, Column: "y", Where: `x::VARCHAR IN (SELECT '3' UNION SELECT 'x')`},
			`x::VARCHAR IN (SELECT '3' UNION SELECT 'x') AND y IS NULL`, true},
		{"struct_field_accepted", Check{Kind: KindAcceptedValues, Column: "s", Values: []string{"{'a': 3.0}", "{'a': 4.0}"}},
			`CAST(s AS VARCHAR) NOT IN ('{''a'': 3.0}', '{''a'': 4.0}')`, true},
		{"list_element_regex", Check{Kind: KindRegex, Column: "l", Pattern: `^\[\d+\.\d\]$`}, `NOT regexp_matches(CAST(l AS VARCHAR), '^\[\d+\.\d\]$')`, true},
		{"sql_text_literal", Check{Kind: KindSQL, SQL: `SELECT * FROM t WHERE x = '3.5'`}, `x = '3.5'`, true},
		{"where_coalesce_text_literal", Check{Kind: KindNotNull, Column: "y", Where: `coalesce(x, 0) IN ('2.5', '7')`},
			`coalesce(x, 0) IN ('2.5', '7') AND y IS NULL`, true},
		// Numbers compared as numbers, and text cast as text, pass.
		{"where_case_coalesce", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10), Where: `CASE WHEN x > 0 THEN x ELSE 0 END > 0 AND coalesce(x, 0) = greatest(x, 1) AND x <> 3.5`}, "", false},
		{"where_numeric", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10), Where: `x > 0 AND CAST(x AS BIGINT) < 100 AND abs(x) + 1 BETWEEN 1 AND 50`}, "", false},
		{"sql_numeric", Check{Kind: KindSQL, SQL: `SELECT * FROM t WHERE x > 100 OR x IN (7, 8) OR CAST(y AS VARCHAR) = 'w'`}, "", false},
		{"where_text_column", Check{Kind: KindRange, Column: "x", Min: f64(0), Max: f64(10), Where: `CAST(y AS VARCHAR) LIKE 'v%' OR y IS NULL`}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", "SELECT 3::BIGINT AS x, {'a': 3::BIGINT} AS s, [3::BIGINT] AS l, NULL::VARCHAR AS y")
			src.write(t, "b1", "t/part-1.parquet", "SELECT 4.0::DOUBLE AS x, {'a': 4.0::DOUBLE} AS s, [4.0::DOUBLE] AS l, 'v' AS y")
			if c.plain != "" {
				plainReadFails(t, src, c.plain)
			}
			rep, res := review39Audit(t, src, c.check)
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("%s %q (%s); every reader reads the numbers alike: want it passed", res.Status, res.Message, res.Observed)
				}
				return
			}
			if strings.HasPrefix(c.name, "struct_") || strings.HasPrefix(c.name, "list_") {
				// Refused before: pandas renders a struct's and a list's
				// text otherwise whatever their leaves' types.
				if rep.Passed {
					t.Fatalf("passed; want it refused")
				}
				t.Logf("refused: %s", res.Message)
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") ||
				!strings.Contains(res.Message, "t/part-1.parquet") {
				t.Fatalf("passed=%v %s %q (%s); a plain reader renders the values otherwise: want it refused naming both files", rep.Passed, res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReader63TypeOfIntegerWidthsIsRefused: an INTEGER 3 in one file and
// a BIGINT 4 in another are BIGINTs to the audit (union_by_name) and
// INTEGERs to DuckDB's plain read_parquet (the first file's type): a
// range of at most 3 where typeof(x) = 'INTEGER' met no row of the audit
// and passed, where the plain read's 4 fails it. Refused now, naming both
// files; the same range without typeof passes where it reads alike.
func TestReader63TypeOfIntegerWidthsIsRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		check   Check
		plain   string
		refused bool
	}{
		{"where_typeof", Check{Kind: KindRange, Column: "x", Max: f64(3), Where: `typeof(x) = 'INTEGER'`}, `typeof(x) = 'INTEGER' AND x > 3`, true},
		{"sql_typeof", Check{Kind: KindSQL, SQL: `SELECT * FROM t WHERE typeof(x) <> 'BIGINT'`}, `typeof(x) <> 'BIGINT'`, true},
		{"range_without_typeof", Check{Kind: KindRange, Column: "x", Max: f64(10), Where: `x > 0`}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", "SELECT 3::INTEGER AS x")
			src.write(t, "b1", "t/part-1.parquet", "SELECT 4::BIGINT AS x")
			if c.plain != "" {
				plainReadFails(t, src, c.plain)
			}
			rep, res := review39Audit(t, src, c.check)
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("%s %q (%s); want it passed", res.Status, res.Message, res.Observed)
				}
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") || !strings.Contains(res.Message, "typeof") {
				t.Fatalf("passed=%v %s %q (%s); typeof reads the types otherwise: want it refused naming both files", rep.Passed, res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// plainReadFails runs DuckDB (the interop venv's) over src's table t and
// fails the test unless rows meeting failing are none to union_by_name's
// reading and some to the plain read_parquet's: the case shows the two
// readings apart. Without Python, or with -short, it checks nothing.
func plainReadFails(t *testing.T, src *dirSource, failing string) {
	t.Helper()
	python, err := testPython()
	if err != nil || testing.Short() {
		return
	}
	out, err := exec.Command(python, "-c", reader63Plain, filepath.Join(src.root, "b1", "t"), failing).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v: %s", err, out)
	}
	if f := strings.Fields(string(out)); len(f) != 2 || f[0] != "0" || f[1] == "0" {
		t.Fatalf("union_by_name and plain read_parquet count %q failing: the case shows nothing", out)
	}
}
